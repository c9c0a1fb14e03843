// meshlm sample --checkpoint RUN_DIR [--prompt TEXT | --prompt-file PATH | --chat] [sampling flags]
//
// The prompt comes from --prompt, --prompt-file (`-` = stdin) or, when neither is given and
// stdin is not a terminal, from stdin; it is used verbatim. Output: the prompt, then the
// continuation streamed token by token. With --num-samples N > 1 every sample is preceded by a
// `--- sample i ---` line (i = 1..N) on stdout; the N samples are decoded together as one
// batch, so sample 1 streams live and samples 2..N are printed when the batch is done.
//
// With --chat it is a conversation instead: each line of stdin is a user turn, the conversation
// so far goes through the model's chat template (chat_request.h: the run's tokenizer_config.json,
// else ChatML) with the generation prompt, and the reply, cut at the template's end of turn, is
// printed on its own line and becomes the next turn's history.
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "meshlm/cli/commands.h"
#include "meshlm/cli/overrides.h"
#include "meshlm/cli/run_dir.h"
#include "meshlm/cli/validators.h"
#include "meshlm/core/error.h"
#include "meshlm/core/threads.h"
#include "meshlm/data/tokenizer.h"
#include "meshlm/infer/chat_request.h"
#include "meshlm/infer/generate.h"
#include "meshlm/infer/stop_strings.h"
#include "meshlm/kernels/ops/run_device.h"
#include "meshlm/model/transformer_layout.h"

namespace meshlm {

namespace {
struct SampleArgs {
    std::string device = "auto";  // kernels::resolve_run_device
    std::string checkpoint, prompt, prompt_file, precision = "fp32";
    std::vector<std::string> stops;
    SamplingOptions opt;
    int num_samples = 1;
    int threads = 0;
    bool chat = false, show_prompt = false;
};

std::string read_prompt(const SampleArgs& a, bool prompt_given) {
    if (prompt_given) return a.prompt;
    if (a.prompt_file.empty() && isatty(STDIN_FILENO)) return "";
    if (a.prompt_file.empty() || a.prompt_file == "-")
        return {std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>()};
    std::ifstream in(a.prompt_file, std::ios::binary);
    if (!in) MESHLM_INVALID("cannot read the prompt file ", a.prompt_file);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// --chat: one reply per line of stdin, the conversation kept as the template's history.
int chat_loop(const SampleArgs& a, const RunDir& run, Decoder& decoder, const float* params) {
    const Tokenizer& tok = *run.tokenizer;
    const ChatSetup chat = load_chat_setup(chat_config_dirs(run), tok);
    std::vector<std::string> stop_texts = a.stops;
    stop_texts.insert(stop_texts.end(), chat.stop_strings.begin(), chat.stop_strings.end());
    const bool terminal = isatty(STDIN_FILENO);
    const int ctx = run.config.model.max_seq_len;
    jinja::Json messages = jinja::Json::array();
    for (std::string line;;) {
        if (terminal) std::cerr << "> " << std::flush;
        if (!std::getline(std::cin, line)) break;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty()) continue;
        messages.push_back({{"role", "user"}, {"content", line}});
        const std::string prompt = chat.tmpl->apply(messages, true);
        if (a.show_prompt) std::cerr << prompt << "\n";
        const std::vector<std::int32_t> ids = tok.encode(prompt);
        if (static_cast<int>(ids.size()) > ctx)
            std::cerr << "note: the conversation has " << ids.size()
                      << " tokens; the model sees the last " << ctx << "\n";
        StopStrings stops(stop_texts);
        std::string reply;
        auto emit = [&](const std::string& piece) {
            reply += piece;
            std::cout << piece << std::flush;
        };
        generate_samples(decoder, params, ids, tok.eot_id(), a.opt, [&](int, std::int32_t id) {
            if (std::find(chat.stop_ids.begin(), chat.stop_ids.end(), id) != chat.stop_ids.end())
                return false;  // the end of the turn, not shown
            emit(stops.feed(tok.decode({id})));
            return !stops.stopped();
        });
        emit(stops.flush());
        std::cout << "\n" << std::flush;
        messages.push_back({{"role", "assistant"}, {"content", reply}});
    }
    return 0;
}

// The options of `meshlm sample` into a; returns --prompt.
CLI::Option* add_sample_options(CLI::App* cmd, SampleArgs& a) {
    a.opt.seed = 0;
    cmd->add_option("--checkpoint", a.checkpoint, "run directory written by `meshlm train`")
        ->required();
    auto* prompt = cmd->add_option("--prompt", a.prompt,
                                   "text to continue (none, and stdin a terminal: a new document)");
    cmd->add_option("--prompt-file", a.prompt_file, "read the prompt from a file (- = stdin)")
        ->excludes(prompt);
    cmd->add_option("--temperature", a.opt.temperature, "0 = greedy")
        ->capture_default_str()
        ->check(at_least(0));
    cmd->add_option("--top-k", a.opt.top_k, "keep the k most likely tokens (0 = all)")
        ->capture_default_str()
        ->check(at_least(0));
    cmd->add_option("--top-p", a.opt.top_p, "keep the smallest set with this probability mass")
        ->capture_default_str()
        ->check(in_range(0, 1));
    cmd->add_option("--typical-p", a.opt.typical_p,
                    "typical sampling: keep the tokens nearest the entropy holding this mass (1 = "
                    "off)")
        ->capture_default_str()
        ->check(in_range(0, 1));
    cmd->add_option("--eta-cutoff", a.opt.eta_cutoff,
                    "eta-sampling: drop tokens below min(eta, sqrt(eta) exp(-entropy)) (0 = off)")
        ->capture_default_str()
        ->check(in_range(0, 1));
    cmd->add_option("--repetition-penalty", a.opt.repetition_penalty,
                    "divide positive (multiply other) logits of tokens already present (1 = off)")
        ->capture_default_str()
        ->check(positive());
    cmd->add_option("--seed", a.opt.seed, "sampling seed (sample i uses stream i)")
        ->capture_default_str();
    cmd->add_option("--max-new-tokens", a.opt.max_new_tokens, "tokens to generate per sample")
        ->capture_default_str()
        ->check(at_least(0));
    cmd->add_option("--stop", a.stops, "stop a sample when its text contains this (repeatable)");
    cmd->add_option("--num-samples", a.num_samples, "samples to generate (decoded together)")
        ->capture_default_str()
        ->check(in_range(1, 4096));
    cmd->add_option("--precision", a.precision,
                    "weights read by decode steps: fp32, or bf16 (half the bytes, ~3 digits)")
        ->capture_default_str()
        ->check(CLI::IsMember({"fp32", "bf16"}));
    auto* chat = cmd->add_flag("--chat", a.chat,
                               "a conversation: each stdin line is a user turn, answered through "
                               "the model's chat template")
                     ->excludes(prompt);
    cmd->get_option("--prompt-file")->excludes(chat);
    cmd->add_flag("--show-prompt", a.show_prompt,
                  "with --chat: print each turn's templated prompt on stderr")
        ->needs(chat);
    cmd->add_option("--threads", a.threads, "threads (0 = all cores)")
        ->capture_default_str()
        ->check(at_least(0));
    cmd->add_option("--device", a.device,
                    "where the model runs: cpu, cuda (one GPU; Transformer-VQ and T5-bias models "
                    "are refused by name) or auto (cuda when built in, a GPU is visible and the "
                    "model runs there; else the CPU)")
        ->capture_default_str()
        ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
    return prompt;
}

// Generates the samples of `ids` (the prompt `text`): sample 1 streams, the others follow.
int print_samples(const SampleArgs& a, const Tokenizer* tok, Decoder& decoder, const float* params,
                  const std::vector<std::int32_t>& ids, const std::string& text) {
    const int N = a.num_samples;
    std::vector<StopStrings> stops(N, StopStrings(a.stops));
    std::vector<std::string> later(N);  // samples 2..N, printed after the batch
    auto header = [&](int i) { return "--- sample " + std::to_string(i + 1) + " ---\n"; };
    for (int i = 1; i < N; ++i) later[i] = header(i) + text;
    if (N > 1) std::cout << header(0);
    std::cout << text << std::flush;
    auto emit = [&](int i, const std::string& piece) {
        if (i > 0) return void(later[i] += piece);
        std::cout << piece << std::flush;
    };
    const auto outs =
        generate_samples(decoder, params, ids, tok->eot_id(), a.opt, [&](int i, std::int32_t id) {
            emit(i, stops[i].feed(tok->decode({id})));
            return !stops[i].stopped();
        });
    for (int i = 0; i < N; ++i) {
        emit(i, stops[i].flush());
        if (i > 0) std::cout << later[i];
        std::cout << "\n";
    }
    std::cout << std::flush;
    // An empty continuation is otherwise indistinguishable from a silent failure.
    for (int i = 0; i < N; ++i)
        if (outs[i].reason == StopReason::eot && outs[i].tokens.empty())
            std::cerr << "note: " << (N > 1 ? "sample " + std::to_string(i + 1) : "the sample")
                      << " is empty: the model's first token was end-of-text (try another "
                         "--seed, a higher --temperature or a longer prompt)\n";
    return 0;
}

int run_sample(const SampleArgs& a, bool prompt_given, const std::vector<std::string>& overrides) {
    // A CPU build or a machine without a GPU is refused before the run is read.
    kernels::resolve_run_device(a.device, "--device", "");
    if (a.opt.top_p <= 0.f) MESHLM_INVALID("--top-p must be in (0, 1]");
    require_used_overrides(overrides, "meshlm sample", {"data.tokenizer"});
    if (a.opt.typical_p <= 0.f) MESHLM_INVALID("--typical-p must be in (0, 1]");
    if (a.opt.eta_cutoff >= 1.f) MESHLM_INVALID("--eta-cutoff must be in [0, 1)");
    if (a.chat && a.num_samples > 1)
        MESHLM_INVALID("--chat answers with one sample: --num-samples must be 1");
    const std::string text = a.chat ? "" : read_prompt(a, prompt_given);
    RunDir run = open_run_dir(a.checkpoint, overrides);
    const Tokenizer* tok = run.tokenizer.get();
    use_inference_threads(a.threads);
    const ModelConfig& cfg = run.config.model;
    Decoder decoder(cfg, a.num_samples, 0,
                    a.precision == "bf16" ? DecodePrecision::bf16 : DecodePrecision::fp32,
                    run_device(run, a.device));
    Buffer<float> params(transformer_layout(cfg).total());
    load_run_weights(run, transformer_layout(cfg), params.data());
    if (a.chat) return chat_loop(a, run, decoder, params.data());
    // As a document reaches the model: with the tokenizer's BOS where it adds one.
    const std::vector<std::int32_t> ids = tok->encode_for_model(text);
    if (static_cast<int>(ids.size()) > cfg.max_seq_len)
        std::cerr << "note: the prompt has " << ids.size() << " tokens; the model sees the last "
                  << cfg.max_seq_len << "\n";
    return print_samples(a, tok, decoder, params.data(), ids, text);
}

}  // namespace

CommandRunner add_sample_command(CLI::App& app, const std::vector<std::string>& overrides) {
    auto* cmd = app.add_subcommand("sample", "Continue a prompt with a trained model");
    auto a = std::make_shared<SampleArgs>();
    CLI::Option* prompt = add_sample_options(cmd, *a);
    return [a, prompt, &overrides] { return run_sample(*a, prompt->count() > 0, overrides); };
}

}  // namespace meshlm
