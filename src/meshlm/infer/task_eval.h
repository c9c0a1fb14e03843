// Zero-shot evaluation on JSONL task files (`meshlm eval --tasks`), scored the way
// lm-evaluation-harness scores them, so the two agree example by example:
//
//   last word (LAMBADA style), one {"text": "..."} per line: the context is the text up to its
//     last space, the target is " " + the last word. acc: the target is the greedy
//     continuation (every target token is the argmax); perplexity: exp(-mean target
//     log-likelihood) over the examples.
//   multiple choice (HellaSwag / PIQA / Winogrande style), one
//     {"context": "...", "choices": ["...", ...], "gold": i} per line ("query" and "label" are
//     accepted for "context" and "gold"): each choice is scored as the continuation " " + choice.
//     acc: the most likely choice is gold; acc_norm: the same with log-likelihoods divided by
//     the choice's length in characters.
//
// A (context, continuation) pair is tokenized as lm-eval does: trailing spaces of the context
// move to the continuation, the context is encoded alone and the continuation's tokens are the
// rest of the encoded whole; an empty context is the end-of-text token. Sequences longer than
// max_length keep their last max_length tokens. Log-likelihoods come from the serving engine's
// prompt logprobs, the numbers `meshlm serve` returns for echo requests.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "meshlm/data/tokenizer.h"
#include "meshlm/infer/engine.h"

namespace meshlm {

struct TaskExample {
    std::string context;
    std::vector<std::string> choices;  // last word: the one target (without its leading space)
    int gold = 0;
};

struct Task {
    std::string name;  // the file's stem
    std::string kind;  // "last_word" or "multiple_choice"
    std::vector<TaskExample> examples;
};

// Reads and checks a task file; throws InvalidInput naming the line of a malformed example.
Task load_task(const std::string& path);

struct LoglikelihoodRequest {
    std::vector<std::int32_t> tokens;  // context + continuation
    int ctxlen = 0;                    // tokens of context (the continuation follows)
};
struct Loglikelihood {
    double logprob = 0;   // sum over the continuation's tokens
    bool greedy = false;  // every continuation token was the argmax
};

LoglikelihoodRequest make_request(const Tokenizer& tok, const std::string& context,
                                  const std::string& continuation, int max_length);

// Scores every request through the engine (batched: all are queued at once), calling
// progress(done, total) as they finish.
std::vector<Loglikelihood> score_requests(Engine& engine,
                                          const std::vector<LoglikelihoodRequest>& requests,
                                          const std::function<void(int, int)>& progress = {});

struct TaskResult {
    std::string name, kind;
    int n = 0;
    double acc = 0, acc_norm = 0, perplexity = 0;  // acc_norm: multiple choice only
    // Per example: the predicted choice (last word: 1 if the target is greedy, else 0), the
    // length-normalized prediction, and the log-likelihood of each choice.
    std::vector<int> pred, pred_norm;
    std::vector<std::vector<double>> lls;
};

TaskResult evaluate_task(Engine& engine, const Tokenizer& tok, const Task& task, int max_length,
                         const std::function<void(int, int)>& progress = {});

}  // namespace meshlm
