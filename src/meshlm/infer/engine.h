// The serving engine: continuous batching over a paged KV cache.
//
// Requests (Jobs) bring one or more sequences (prompts x n). One engine thread runs forward
// passes over every running sequence: a decoding sequence brings its one new token, a sequence
// still reading its prompt brings the next chunk of it, up to max_rows tokens a pass, so a long
// prompt is read over several passes while the others keep decoding. Sequences join the batch
// when a slot and their KV blocks are free, and leave it the step they finish, are cancelled, or
// their client goes away.
//
// The KV cache is a fixed pool of blocks. A sequence is admitted only when the blocks for its
// whole length (prompt + max_tokens) can be reserved, so no admitted sequence ever waits for
// memory or is preempted. Sequences that cannot be admitted wait, in order, in a bounded queue;
// submit() refuses a job that would overflow it.
//
// Results never depend on what else is running: the decoder computes every row bitwise
// independently of the others, sampling draws from the sequence's own counter-based RNG stream,
// and logprobs come from the model's raw logits (before temperature or penalties).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "meshlm/core/threads.h"
#include "meshlm/data/tokenizer.h"
#include "meshlm/infer/metrics.h"
#include "meshlm/infer/sampler.h"
#include "meshlm/model/paged_decoder.h"

namespace meshlm {

struct EngineOptions {
    int max_running = 32;   // sequences decoded together
    int max_waiting = 256;  // sequences queued behind them
    int max_rows = 256;     // tokens per forward pass (prompt chunks + one per decoding sequence)
    int block_size = 16;    // positions per KV block
    int num_blocks = 0;     // KV pool size (0: enough for max_running full contexts)
    DecodePrecision precision = DecodePrecision::fp32;
    int threads = 0;  // compute threads of the engine thread (0: the creating thread's
                      // thread_count(); OpenMP settings are per thread)
};

// What one sequence (one completion choice) asks for.
struct SeqSpec {
    std::vector<std::int32_t> prompt;    // at least one token
    int max_tokens = 16;                 // new tokens (0: only score the prompt)
    SamplingOptions sampling;            // temperature, top_k, top_p, repetition_penalty, seed
    std::uint64_t stream = 0;            // RNG stream (the choice's index)
    int logprobs = -1;                   // -1: none; k >= 0: the token's logprob and the top k
    bool prompt_logprobs = false;        // logprobs of prompt tokens 1..P-1 too (echo)
    bool ignore_eos = false;             // do not stop at the end-of-text token or stop_ids
    std::vector<std::int32_t> stop_ids;  // more tokens that end the text (a chat template's
                                         // end of turn, generation_config's eos_token_id)
    std::vector<std::string> stop;       // stop strings (excluded from the text)
};

struct TokenLogprob {
    std::int32_t id = 0;
    float logprob = 0;
    std::vector<std::pair<std::int32_t, float>> top;  // most likely first
};

// One sequence's results, appended to by the engine as it goes (read under Job::mu).
struct ChoiceResult {
    std::vector<TokenLogprob> prompt;  // prompt tokens 1..P-1 (prompt_logprobs)
    std::vector<TokenLogprob> tokens;  // generated tokens (the end-of-text token included)
    std::string text;                  // text safe to show so far (stop strings cut)
    std::string finish_reason;         // "" while running: "stop", "length" or "cancelled"
    bool prompt_done = false;
};

class Job {
  public:
    explicit Job(int n) : choices(n) {}
    std::mutex mu;
    std::condition_variable cv;  // notified on every change
    std::vector<ChoiceResult> choices;
    int finished = 0;          // choices with a finish_reason
    bool first_token = false;  // some choice produced a token
    std::atomic<bool> cancelled{false};
    std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
    bool done() const { return finished == static_cast<int>(choices.size()); }
};

enum class SubmitStatus { ok, queue_full, draining, too_large };

class Engine {
  public:
    // params: flat weights (transformer_layout of cfg), kept by the caller for the engine's life.
    Engine(const ModelConfig& cfg, const float* params, const Tokenizer& tokenizer,
           const EngineOptions& opt, Metrics* metrics = nullptr);
    ~Engine();

    const ModelConfig& config() const { return cfg_; }
    const EngineOptions& options() const { return opt_; }
    int context() const { return cfg_.max_seq_len; }
    // KV blocks a sequence of `tokens` positions reserves.
    int blocks_for(int tokens) const { return (tokens + opt_.block_size - 1) / opt_.block_size; }

    // Queues the job's sequences (job->choices.size() == specs.size()). Not ok: nothing queued.
    SubmitStatus submit(std::shared_ptr<Job> job, std::vector<SeqSpec> specs);
    // Stops admitting new jobs (submit answers draining); running and queued ones go on.
    void drain();
    // Ends every sequence now with finish_reason "cancelled".
    void cancel_all();
    bool idle() const;
    int waiting() const;
    int running() const;
    int blocks_free() const;

  private:
    struct Seq;
    void loop();
    bool admit();  // moves waiting sequences into the batch; true if any
    void step();
    void finish(Seq& s, const char* reason);
    void emit_token(Seq& s, const float* logits_row);
    TokenLogprob logprob_of(const float* logits, std::int32_t id, int top) const;

    ModelConfig cfg_;
    const Tokenizer& tok_;
    EngineOptions opt_;
    Metrics* metrics_;
    PagedDecoder decoder_;
    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::deque<std::unique_ptr<Seq>> waiting_;
    std::vector<std::unique_ptr<Seq>> running_;  // engine thread only (sizes read under mu_)
    std::vector<std::int32_t> free_blocks_;
    int running_count_ = 0;
    bool draining_ = false, stop_ = false, cancel_all_ = false;
    std::vector<DecodeRow> rows_;
    std::vector<std::pair<Seq*, int>> row_seq_;  // (sequence, position) of each row
    std::vector<float> scratch_row_;
    std::vector<std::pair<float, std::int32_t>> scratch_;
    std::thread thread_;
};

}  // namespace meshlm
