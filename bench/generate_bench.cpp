// Generation speed of the KV-cache decoder on a randomly initialized GPT-2 (GPT-2 small by
// default), greedy or sampled (--temperature > 0, with --top-p): one prompt pass, then one step
// per new token. Prints the prompt-pass time,
// tokens/s over the whole generate call (prompt pass included, as transformers' generate is
// timed) and the mean step time of the first and last 64 new tokens (flatness).
//   generate_bench [--threads 2] [--prompt 128] [--new 256] [--precision fp32|bf16]
//                  [--layers 12] [--width 768] [--heads 12] [--vocab 50257] [--ctx 1024]
//                  [--temperature 0] [--top-p 1]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "meshlm/core/rng.h"
#include "meshlm/core/threads.h"
#include "meshlm/infer/generate.h"
#include "meshlm/kernels/kernels.h"
#include "meshlm/model/transformer_layout.h"

using namespace meshlm;
using Clock = std::chrono::steady_clock;

int main(int argc, char** argv) {
    ModelConfig cfg;
    cfg.n_layer = 12, cfg.d_model = 768, cfg.n_head = 12, cfg.vocab_size = 50257;
    cfg.max_seq_len = 1024;
    int threads = 2, prompt_len = 128, new_tokens = 256, reps = 1;
    DecodePrecision precision = DecodePrecision::fp32;
    float temperature = 0.f, top_p = 1.f;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string k = argv[i];
        const int v = std::atoi(argv[i + 1]);
        if (k == "--threads")
            threads = v;
        else if (k == "--prompt")
            prompt_len = v;
        else if (k == "--new")
            new_tokens = v;
        else if (k == "--reps")
            reps = v;
        else if (k == "--layers")
            cfg.n_layer = v;
        else if (k == "--width")
            cfg.d_model = v;
        else if (k == "--heads")
            cfg.n_head = v;
        else if (k == "--vocab")
            cfg.vocab_size = v;
        else if (k == "--ctx")
            cfg.max_seq_len = v;
        else if (k == "--temperature")
            temperature = std::strtof(argv[i + 1], nullptr);
        else if (k == "--top-p")
            top_p = std::strtof(argv[i + 1], nullptr);
        else if (k == "--precision")
            precision =
                std::strcmp(argv[i + 1], "bf16") ? DecodePrecision::fp32 : DecodePrecision::bf16;
        else {
            std::fprintf(stderr, "unknown flag %s\n", argv[i]);
            return 2;
        }
    }
    set_thread_count(threads);
    ParamLayout layout = transformer_layout(cfg);
    std::vector<float> params(layout.total());
    init_params(cfg, layout, params.data(), 1234);
    Philox rng(42, 0);
    std::vector<std::int32_t> prompt(prompt_len);
    for (auto& t : prompt) t = static_cast<std::int32_t>(rng.below(cfg.vocab_size));

    Decoder decoder(cfg, 1, 0, precision);
    SamplingOptions opt;
    opt.temperature = temperature;
    opt.top_p = top_p;
    opt.seed = 7;
    opt.max_new_tokens = new_tokens;
    opt.stop_at_eot = false;
    const char* name = precision == DecodePrecision::bf16 ? "bf16" : "fp32";
    for (int r = 0; r < reps; ++r) {
        std::vector<Clock::time_point> at;
        at.reserve(new_tokens);
        const auto t0 = Clock::now();
        auto out = generate_samples(decoder, params.data(), prompt, -1, opt, [&](int, int) {
            at.push_back(Clock::now());
            return true;
        });
        const auto t1 = Clock::now();
        auto sec = [](Clock::duration d) { return std::chrono::duration<double>(d).count(); };
        const int n = static_cast<int>(at.size());
        const int w = std::min(64, n / 2);
        const double first = sec(at[w] - at[0]) / w * 1e3;
        const double last = sec(at[n - 1] - at[n - 1 - w]) / w * 1e3;
        std::printf(
            "meshlm %s threads=%d prompt=%d new=%d temperature=%g top_p=%g: %.2f tokens/s, "
            "prompt pass %.1f ms, step %.2f ms (first %d) %.2f ms (last %d)\n",
            name, threads, prompt_len, n, temperature, top_p, n / sec(t1 - t0),
            sec(at[0] - t0) * 1e3, first, w, last, w);
        (void)out;
    }
    return 0;
}
