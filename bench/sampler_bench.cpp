// Time of one sample_token call at GPT-2's / SmolLM's vocabulary size (V = 49152 by default) for
// each filter: plain temperature, top-k 40, top-p 0.9 on peaked logits (N(0, 6^2): a nucleus of
// tens of tokens, as a trained model's usually is) and on flat ones (N(0, 0.5^2): tens of
// thousands), best of 5 rounds of 200 calls. The last line times a sort of the whole
// vocabulary, which every non-greedy call paid before the sampler stopped sorting what it does
// not need to (bench/README.md).
//   build/bench/sampler_bench [V]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "meshlm/infer/sampler.h"

using namespace meshlm;

namespace {

std::vector<float> logits(int V, float scale) {
    Philox rng(5, 9);
    std::vector<float> z(V);
    for (float& x : z) x = scale * rng.normal();
    return z;
}

template <typename F>
double best_ms(F f) {
    constexpr int kCalls = 200;
    double best = 1e30;
    for (int r = 0; r < 5; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < kCalls; ++i) f();
        best = std::min(
            best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return best / kCalls * 1e3;
}

}  // namespace

int main(int argc, char** argv) {
    const int V = argc > 1 ? std::atoi(argv[1]) : 49152;
    const auto peaked = logits(V, 6.f), flat = logits(V, 0.5f);
    std::vector<std::pair<float, std::int32_t>> scratch;
    Philox rng(1, 2);
    struct Case {
        const char* name;
        const std::vector<float>* z;
        int top_k;
        float top_p;
    };
    const Case cases[] = {{"temperature 0.8", &peaked, 0, 1.f},
                          {"top-k 40", &peaked, 40, 1.f},
                          {"top-p 0.9, peaked logits", &peaked, 0, 0.9f},
                          {"top-p 0.9, flat logits", &flat, 0, 0.9f}};
    std::printf("sample_token, V = %d, ms per call (best of 5 x 200 calls)\n", V);
    long sink = 0;
    for (const Case& c : cases) {
        SamplingOptions opt;
        opt.temperature = 0.8f, opt.top_k = c.top_k, opt.top_p = c.top_p;
        const double ms = best_ms([&] { sink += sample_token(c.z->data(), V, opt, rng, scratch); });
        std::printf("  %-26s %8.3f\n", c.name, ms);
    }
    std::vector<std::pair<float, std::int32_t>> all(V);
    const double sort_ms = best_ms([&] {
        for (int v = 0; v < V; ++v) all[v] = {peaked[v], v};
        std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) {
            return a.first > b.first || (a.first == b.first && a.second < b.second);
        });
        sink += all[0].second;
    });
    std::printf("  %-26s %8.3f\n", "sorting all V (reference)", sort_ms);
    return sink == 42 ? 1 : 0;  // keeps the calls from being optimized away
}
