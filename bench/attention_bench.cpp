// Forward and backward time of the causal softmax attention kernel (kernels/cpu/attention.cpp)
// on random inputs, by default at the Llama bench's shape (train_llama_small.sh: B 4, T 256,
// 9 query heads on 3 key/value heads of width 64). Buffers come from meshlm::Buffer, as in
// training (huge pages from 4 MiB). Prints the fastest of `reps` calls of each pass and its
// GFLOP/s (causal: the multiply-adds of the kept half of Q K^T and P V, twice that backward).
//   build/bench/attention_bench [T 256] [B 4] [threads 2] [H 9] [Hkv 3] [D 64] [reps 20]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "meshlm/core/buffer.h"
#include "meshlm/core/threads.h"
#include "meshlm/kernels/kernels.h"

using namespace meshlm;

int main(int argc, char** argv) {
    auto arg = [&](int i, int def) { return argc > i ? std::atoi(argv[i]) : def; };
    const int T = arg(1, 256), B = arg(2, 4), threads = arg(3, 2), H = arg(4, 9), Hkv = arg(5, 3),
              D = arg(6, 64), reps = arg(7, 20);
    if (T < 1 || B < 1 || threads < 1 || Hkv < 1 || H % Hkv != 0 || D < 1 || reps < 1) {
        std::fprintf(stderr, "usage: attention_bench [T] [B] [threads] [H] [Hkv] [D] [reps]\n");
        return 2;
    }
    set_thread_count(threads);
    const std::size_t W = static_cast<std::size_t>(H + 2 * Hkv) * D, rows = std::size_t(B) * T;
    Buffer<float> qkv(rows * W), dqkv(rows * W), out(rows * H * D), dout(rows * H * D),
        lse(rows * H);
    for (std::size_t i = 0; i < qkv.size(); ++i) qkv[i] = std::sin(0.37f * static_cast<float>(i));
    for (std::size_t i = 0; i < dout.size(); ++i) dout[i] = std::cos(0.11f * static_cast<float>(i));
    using Clock = std::chrono::steady_clock;
    double fwd = 1e9, bwd = 1e9;
    for (int r = 0; r < reps + 1; ++r) {  // the first call of each is a warmup
        const auto t0 = Clock::now();
        kernels::attention_forward(out.data(), lse.data(), qkv.data(), B, T, H, Hkv, D, nullptr);
        const auto t1 = Clock::now();
        kernels::attention_backward(dqkv.data(), dout.data(), out.data(), lse.data(), qkv.data(), B,
                                    T, H, Hkv, D, nullptr);
        const auto t2 = Clock::now();
        if (r == 0) continue;
        fwd = std::min(fwd, std::chrono::duration<double>(t1 - t0).count());
        bwd = std::min(bwd, std::chrono::duration<double>(t2 - t1).count());
    }
    const double flop = 4.0 * B * H * D * (0.5 * T * (T + 1.0));  // forward, causal
    std::printf(
        "attention B %d T %d H %d Hkv %d D %d, %d threads: forward %.3f ms (%.1f GFLOP/s), "
        "backward %.3f ms (%.1f GFLOP/s)\n",
        B, T, H, Hkv, D, threads, fwd * 1e3, flop / fwd * 1e-9, bwd * 1e3, 2 * flop / bwd * 1e-9);
}
