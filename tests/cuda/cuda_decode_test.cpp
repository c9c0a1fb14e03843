// Decoding on the GPU against the CPU: the KV-cache decoder (`sample`) and the paged decoder
// (`serve`, `eval --tasks`) of each model family, fp32 and bf16 weights, fed the same prompts and
// tokens on both devices. The GPU sums in other orders than the CPU, so logits agree to fp32
// rounding: every logit within 1e-4 of the largest |logit| of its row (a wrong cache row, position
// or head is off by the size of the logits themselves). Skips without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "meshlm/kernels/device.h"
#include "meshlm/model/decoder.h"
#include "meshlm/model/paged_decoder.h"
#include "meshlm/model/transformer.h"
#include "meshlm/model/transformer_layout.h"
#include "test_util.h"

namespace meshlm {
namespace {

constexpr double kTol = 1e-4;

struct Family {
    std::string name;
    ModelConfig model;
};

std::vector<Family> families() {
    ModelConfig gpt2 = test::tiny_model();
    gpt2.init_std = 0.2f;  // logits far from uniform, differences visible
    ModelConfig llama = gpt2;
    llama.position = "rope", llama.norm = "rmsnorm", llama.norm_bias = false;
    llama.mlp = "swiglu", llama.n_head = 4, llama.n_kv_head = 2, llama.tied_head = false;
    llama.qkv_bias = llama.proj_bias = llama.mlp_bias = false;
    ModelConfig gptj = gpt2;
    gptj.block = "parallel", gptj.position = "rope", gptj.rope_dim = 8;
    gptj.rope_style = "interleaved", gptj.tied_head = false, gptj.head_bias = true;
    ModelConfig alibi = gpt2;
    alibi.position = "alibi", alibi.qk_norm = true, alibi.dropout_attn = 0.1f;  // dropout: off
    ModelConfig t5 = gpt2;  // distances past max_distance share the bias's last entry
    t5.position = "t5_bias", t5.t5_buckets = 8, t5.t5_max_distance = 9;
    return {{"gpt2", gpt2},
            {"llama", llama},
            {"gptj", gptj},
            {"alibi+qk_norm", alibi},
            {"t5_bias", t5}};
}

// Largest |a - b| over a row of V logits, relative to the row's largest |b|.
double row_error(const float* a, const float* b, int V) {
    double diff = 0, scale = 1e-30;
    for (int v = 0; v < V; ++v) {
        diff = std::max(diff, static_cast<double>(std::fabs(a[v] - b[v])));
        scale = std::max(scale, static_cast<double>(std::fabs(b[v])));
    }
    return diff / scale;
}

std::vector<std::int32_t> ids(int n, int V, unsigned seed) {
    std::mt19937 g(seed);
    std::vector<std::int32_t> t(n);
    for (auto& x : t) x = static_cast<std::int32_t>(g() % V);
    return t;
}

class CudaDecode : public ::testing::Test {
  protected:
    void SetUp() override {
        if (kernels::cuda_device_count() == 0)
            GTEST_SKIP() << "no GPU here: " << kernels::cuda_unavailable_reason();
        kernels::set_cuda_device(0);
    }
};

// Two sequences with their own prompts, then steps, one of which skips sequence 1.
double kv_cache_error(const ModelConfig& cfg, const std::vector<float>& params, DecodePrecision p) {
    constexpr int S = 2, T = 7, kSteps = 6;
    const int V = cfg.vocab_size;
    Decoder gpu(cfg, S, 0, p, Device::cuda), cpu(cfg, S, 0, p, Device::cpu);
    const std::vector<std::int32_t> prompt = ids(S * T, V, 3);
    double err = 0;
    auto compare = [&](const float* g, const float* c, bool skip1) {
        for (int s = 0; s < S; ++s)
            if (!(skip1 && s == 1))
                err = std::max(err, row_error(g + static_cast<std::size_t>(s) * V,
                                              c + static_cast<std::size_t>(s) * V, V));
    };
    compare(gpu.prefill(params.data(), prompt.data(), T, S),
            cpu.prefill(params.data(), prompt.data(), T, S), false);
    for (int k = 0; k < kSteps; ++k) {
        std::vector<std::int32_t> next = ids(S, V, 100 + k);
        if (k == 2) next[1] = -1;  // sequence 1 sits this step out
        compare(gpu.step(params.data(), next.data()), cpu.step(params.data(), next.data()), k == 2);
    }
    return err;
}

// A prompt read in two chunks beside another sequence's decode rows, in a shuffled block pool.
double paged_error(const ModelConfig& cfg, const std::vector<float>& params, DecodePrecision p) {
    constexpr int kBlocks = 8, kBlockSize = 4, kRows = 16;
    const int V = cfg.vocab_size;
    PagedDecoder gpu(cfg, kBlocks, kBlockSize, kRows, p, Device::cuda);
    PagedDecoder cpu(cfg, kBlocks, kBlockSize, kRows, p, Device::cpu);
    gpu.set_params(params.data());
    cpu.set_params(params.data());
    const std::vector<std::int32_t> table_a = {5, 1, 7}, table_b = {2, 6, 0, 3};
    const std::vector<std::int32_t> a = ids(10, V, 11), b = ids(13, V, 12);
    double err = 0;
    // Pass 1: sequence b's first 9 positions. Pass 2: b's next 3 beside a's first 6. Then one
    // row of each sequence per pass.
    std::vector<DecodeRow> rows;
    auto run = [&](const std::vector<DecodeRow>& r) {
        const int n = static_cast<int>(r.size());
        int wanted = 0;
        for (const DecodeRow& x : r) wanted += x.logits ? 1 : 0;
        const float* cl = cpu.forward(r.data(), n);
        const std::vector<float> c(cl, cl + static_cast<std::size_t>(wanted) * V);
        const float* g = gpu.forward(r.data(), n);
        for (int m = 0; m < wanted; ++m)
            err = std::max(err, row_error(g + static_cast<std::size_t>(m) * V,
                                          c.data() + static_cast<std::size_t>(m) * V, V));
    };
    for (int t = 0; t < 9; ++t) rows.push_back({b[t], t, table_b.data(), t == 8});
    run(rows);
    rows.clear();
    for (int t = 9; t < 12; ++t) rows.push_back({b[t], t, table_b.data(), t == 11});
    for (int t = 0; t < 6; ++t) rows.push_back({a[t], t, table_a.data(), t == 5});
    run(rows);
    for (int t = 6; t < 10; ++t) {
        rows = {{a[t], t, table_a.data(), true}};
        if (t == 6) rows.push_back({b[12], 12, table_b.data(), true});
        run(rows);
    }
    return err;
}

TEST_F(CudaDecode, KvCacheAndPagedDecodersMatchTheCpu) {
    for (const Family& f : families()) {
        std::vector<float> params(transformer_layout(f.model).total());
        init_params(f.model, transformer_layout(f.model), params.data(), 7);
        for (const DecodePrecision p : {DecodePrecision::fp32, DecodePrecision::bf16}) {
            const char* pn = p == DecodePrecision::fp32 ? "fp32" : "bf16";
            SCOPED_TRACE(f.name + " " + pn);
            const double kv = kv_cache_error(f.model, params, p);
            const double paged = paged_error(f.model, params, p);
            EXPECT_LE(kv, kTol);
            EXPECT_LE(paged, kTol);
            std::printf("[ decoded  ] %-14s %s  kv-cache max rel %.2e  paged max rel %.2e\n",
                        f.name.c_str(), pn, kv, paged);
        }
    }
}

// What cannot decode on a GPU is refused by name when the decoder is made.
TEST_F(CudaDecode, RefusesWhatHasNoKernelByName) {
    ModelConfig vq = test::tiny_model();
    vq.attention = "vq", vq.position = "none", vq.mlp = "sqrelu", vq.d_ff = 0;
    vq.vq_block_len = 8, vq.vq_codes = 16, vq.vq_d_k = 16, vq.vq_d_v = 0;
    try {
        Decoder d(vq, 1, 0, DecodePrecision::fp32, Device::cuda);
        FAIL() << "a Transformer-VQ model decoded on the GPU";
    } catch (const InvalidInput& e) {
        EXPECT_NE(std::string(e.what()).find("Transformer-VQ"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace meshlm
