// Linear time, measured: forward + backward milliseconds per token of a one-block model whose
// block is only attention (model.mlp none), Transformer-VQ's (model.attention vq) against the
// model's full softmax attention at the same width, for one sequence of each length. The
// projections, norms and the head cost the same per token at every length; what grows is
// attention. Prints a row per length and the ratio of the longest length's time per token to the
// shortest's for each.
//   build/bench/vq_attention_bench [--threads 2] [--lengths 512,1024,...] [--reps 2]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "meshlm/core/rng.h"
#include "meshlm/core/threads.h"
#include "meshlm/kernels/kernels.h"
#include "meshlm/model/transformer.h"
#include "meshlm/model/transformer_layout.h"

namespace {

using meshlm::ModelConfig;

// The seed's enwik8 attention at a quarter of its width: d_model 256, d_k 128, d_v 2 d_model,
// 512 codes, blocks of 256; the full-attention model has 4 heads of 64 at the same width.
ModelConfig model(bool vq, int T) {
    ModelConfig m;
    m.n_layer = 1, m.d_model = 256, m.vocab_size = 257, m.max_seq_len = T;
    m.mlp = "none", m.norm = "rmsnorm", m.norm_bias = false, m.tied_head = false;
    if (vq) {
        m.attention = "vq", m.n_head = 1, m.position = "none";
        m.vq_block_len = 256, m.vq_codes = 512, m.vq_d_k = 128;
    } else {
        m.n_head = 4, m.position = "rope", m.qkv_bias = m.proj_bias = false;
    }
    return m;
}

// Best forward + backward seconds of `reps` (after one warm-up) on one sequence of T tokens.
double time_step(const ModelConfig& m, int T, int reps) {
    const meshlm::ParamLayout layout = meshlm::transformer_layout(m);
    std::vector<float> params(layout.total()), grads(layout.total());
    meshlm::init_params(m, layout, params.data(), 1);
    std::vector<std::int32_t> tokens(T), targets(T);
    meshlm::Philox rng(2, 0);
    for (int t = 0; t < T; ++t)
        tokens[t] = static_cast<std::int32_t>(rng.uniform() * 256), targets[t] = tokens[t];
    meshlm::Transformer model(m, 1, T);
    double best = 1e30;
    for (int r = 0; r <= reps; ++r) {
        std::fill(grads.begin(), grads.end(), 0.f);
        const auto t0 = std::chrono::steady_clock::now();
        model.forward(params.data(), tokens.data(), targets.data(), 1, T, 1.f / T);
        model.backward(params.data(), grads.data());
        const double s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (r > 0) best = std::min(best, s);  // r == 0 warms up
    }
    return best;
}

}  // namespace

int main(int argc, char** argv) {
    int threads = 2, reps = 2;
    std::vector<int> lengths = {512, 1024, 2048, 4096, 8192, 16384};
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        if (a == "--threads") {
            threads = std::atoi(argv[i + 1]);
        } else if (a == "--reps") {
            reps = std::atoi(argv[i + 1]);
        } else if (a == "--lengths") {
            lengths.clear();
            for (const char* p = argv[i + 1]; *p;) {
                lengths.push_back(std::atoi(p));
                while (*p && *p != ',') ++p;
                if (*p) ++p;
            }
        } else {
            std::fprintf(stderr, "unknown option %s (--threads N, --reps N, --lengths a,b,...)\n",
                         a.c_str());
            return 2;
        }
    }
    meshlm::set_thread_count(threads);
    std::printf("forward + backward of one attention block, one sequence, %d threads, best of %d\n",
                threads, reps);
    std::printf("%8s %16s %16s %8s\n", "T", "vq ms/token", "full ms/token", "full/vq");
    std::vector<double> vq, full;
    for (int T : lengths) {
        vq.push_back(time_step(model(true, T), T, reps) * 1e3 / T);
        full.push_back(time_step(model(false, T), T, reps) * 1e3 / T);
        std::printf("%8d %16.4f %16.4f %8.2f\n", T, vq.back(), full.back(),
                    full.back() / vq.back());
        std::fflush(stdout);
    }
    std::printf("time per token at T = %d over T = %d: vq %.2fx, full attention %.2fx\n",
                lengths.back(), lengths.front(), vq.back() / vq.front(),
                full.back() / full.front());
    return 0;
}
