// Forward and backward time of the non-softmax attention kernel (model.attn_act) on random
// inputs: B 2, 4 query heads on 2 key/value heads of width 64, rows of T tokens (argument,
// default 1024), each of sqrelu and norm_elu, best of 3, on `threads` threads (default 2).
//   build/bench/attention_act_bench [T] [threads]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "meshlm/core/threads.h"
#include "meshlm/kernels/kernels.h"

using namespace meshlm::kernels;

int main(int argc, char** argv) {
    const int B = 2, T = argc > 1 ? std::atoi(argv[1]) : 1024, H = 4, Hkv = 2, D = 64;
    const int W = (H + 2 * Hkv) * D;
    meshlm::set_thread_count(argc > 2 ? std::atoi(argv[2]) : 2);
    std::vector<float> qkv(static_cast<std::size_t>(B) * T * W), dqkv(qkv.size()),
        out(static_cast<std::size_t>(B) * T * H * D), dout(out.size());
    for (std::size_t i = 0; i < qkv.size(); ++i) qkv[i] = std::sin(0.37f * static_cast<float>(i));
    for (std::size_t i = 0; i < dout.size(); ++i) dout[i] = std::cos(0.11f * static_cast<float>(i));
    using Clock = std::chrono::steady_clock;
    for (AttnAct a : {AttnAct::sqrelu, AttnAct::norm_elu}) {
        AttnActParams p;
        p.act = a, p.t_norm = static_cast<float>(T);
        double fwd = 1e9, bwd = 1e9;
        for (int r = 0; r < 3; ++r) {
            const auto t0 = Clock::now();
            attention_act_forward(out.data(), qkv.data(), B, T, H, Hkv, D, nullptr, p, 0.f);
            const auto t1 = Clock::now();
            attention_act_backward(dqkv.data(), dout.data(), qkv.data(), B, T, H, Hkv, D, nullptr,
                                   p, 0.f);
            const auto t2 = Clock::now();
            fwd = std::min(fwd, std::chrono::duration<double>(t1 - t0).count());
            bwd = std::min(bwd, std::chrono::duration<double>(t2 - t1).count());
        }
        std::printf("%-10s T %5d: forward %.4f s, backward %.4f s\n",
                    a == AttnAct::sqrelu ? "sqrelu" : "norm_elu", T, fwd, bwd);
    }
}
