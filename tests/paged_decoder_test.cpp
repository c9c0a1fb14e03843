// The paged decoder (serving's forward pass) against the full forward pass for several model
// families, and its batching contract: a sequence's logits are bitwise the same whether its
// prompt is read in one pass or in chunks, alone or among other sequences at other positions,
// wherever its blocks lie in the pool. The paged attention kernel against the contiguous one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "meshlm/core/threads.h"
#include "meshlm/kernels/kernels.h"
#include "meshlm/model/paged_decoder.h"
#include "meshlm/model/transformer.h"
#include "meshlm/model/transformer_layout.h"

namespace meshlm {
namespace {

ModelConfig family(const std::string& name) {
    ModelConfig c;
    c.n_layer = 2;
    c.d_model = 48;
    c.n_head = 4;
    c.vocab_size = 61;
    c.max_seq_len = 40;
    c.init_std = 0.2f;  // large weights: logits far from uniform, differences visible
    if (name == "llama" || name == "llama_qk_norm") {
        c.qk_norm = name == "llama_qk_norm";
        c.norm = "rmsnorm";
        c.norm_bias = false;
        c.position = "rope";
        c.n_kv_head = 2;
        c.mlp = "swiglu";
        c.qkv_bias = c.proj_bias = c.mlp_bias = false;
        c.tied_head = false;
    } else if (name == "gptj") {
        c.block = "parallel";
        c.position = "rope";
        c.rope_dim = 8;
        c.rope_style = "interleaved";
        c.tied_head = false;
        c.head_bias = true;
    } else if (name == "alibi" || name == "alibi_norm_elu") {
        c.position = "alibi";
        c.n_kv_head = 1;
        if (name == "alibi_norm_elu") c.attn_act = "norm_elu";
    } else if (name == "attn_only") {
        c.mlp = "none";  // blocks of attention only
    } else if (name == "sqrelu") {
        c.attn_act = "sqrelu";  // divides by max_seq_len, whatever the positions filled
    } else if (name == "t5_logit_scale") {
        // T5's bias past its max_distance (the decode kernel's last table row), scaled logits.
        c.position = "t5_bias";
        c.n_kv_head = 2;
        c.t5_buckets = 8;
        c.t5_max_distance = 12;
        c.logit_scale = 0.3f;
    }
    return c;
}

std::vector<std::int32_t> tokens(int n, int V, unsigned seed) {
    std::mt19937 g(seed);
    std::vector<std::int32_t> t(n);
    for (auto& x : t) x = static_cast<std::int32_t>(g() % V);
    return t;
}

class PagedDecoderFamilies : public ::testing::TestWithParam<std::string> {
  protected:
    void SetUp() override {
        set_thread_count(2);
        cfg_ = family(GetParam());
        ParamLayout layout = transformer_layout(cfg_);
        params_.resize(layout.total());
        init_params(cfg_, layout, params_.data(), 7);
    }
    ModelConfig cfg_;
    std::vector<float> params_;
};

TEST_P(PagedDecoderFamilies, EveryPositionMatchesTheFullForwardPass) {
    const int T = 33, V = cfg_.vocab_size;
    auto seq = tokens(T, V, 1);
    Transformer model(cfg_, 1, T);
    model.forward(params_.data(), seq.data(), nullptr, 1, T);
    PagedDecoder dec(cfg_, 12, 4, 64);
    dec.set_params(params_.data());
    std::vector<std::int32_t> blocks = {5, 2, 7, 0, 11, 3, 6, 4, 9};  // scattered, 9 x 4 >= 33
    std::vector<DecodeRow> rows;
    for (int t = 0; t < T; ++t) rows.push_back({seq[t], t, blocks.data(), true});
    const float* got = dec.forward(rows.data(), T);
    double err = 0, scale = 1e-6;
    const int ld = model.logits_stride();
    for (int t = 0; t < T; ++t)
        for (int v = 0; v < V; ++v) {
            const double want = model.logits()[static_cast<std::size_t>(t) * ld + v];
            err = std::max(err, std::fabs(double(got[static_cast<std::size_t>(t) * V + v]) - want));
            scale = std::max(scale, std::fabs(want));
        }
    EXPECT_LT(err / scale, 2e-5) << GetParam();
}

TEST_P(PagedDecoderFamilies, ChunkingAndBatchingNeverChangeALogit) {
    const int V = cfg_.vocab_size, T = 30;
    auto a = tokens(T, V, 2), b = tokens(T, V, 3);
    // Reference: sequence a alone, one row per pass.
    std::vector<float> ref;
    {
        PagedDecoder dec(cfg_, 16, 4, 64);
        dec.set_params(params_.data());
        std::vector<std::int32_t> blk = {0, 1, 2, 3, 4, 5, 6, 7};
        for (int t = 0; t < T; ++t) {
            DecodeRow r{a[t], t, blk.data(), true};
            const float* z = dec.forward(&r, 1);
            ref.insert(ref.end(), z, z + V);
        }
    }
    // a in chunks of 7 alongside b one row at a time and c (prompt of b) in one chunk, with
    // other block layouts; only some rows ask for logits.
    PagedDecoder dec(cfg_, 32, 4, 64);
    dec.set_params(params_.data());
    std::vector<std::int32_t> blk_a = {9, 3, 17, 30, 1, 22, 8, 12},
                              blk_b = {0, 2, 4, 6, 10, 11, 13, 14},
                              blk_c = {15, 16, 18, 19, 20, 21, 23, 24};
    std::vector<float> got(static_cast<std::size_t>(T) * V);
    int ta = 0, tb = 0;
    bool c_done = false;
    while (ta < T) {
        std::vector<DecodeRow> rows;
        std::vector<int> a_pos;
        if (tb < T) rows.push_back({b[tb], tb, blk_b.data(), tb % 2 == 0}), ++tb;
        for (int k = 0; k < 7 && ta < T; ++k, ++ta) {
            rows.push_back({a[ta], ta, blk_a.data(), true});
            a_pos.push_back(ta);
        }
        if (!c_done) {
            for (int t = 0; t < T; ++t) rows.push_back({b[t], t, blk_c.data(), t == T - 1});
            c_done = true;
        }
        const float* z = dec.forward(rows.data(), static_cast<int>(rows.size()));
        int li = 0;
        for (const DecodeRow& r : rows) {
            if (!r.logits) continue;
            if (r.blocks == blk_a.data())
                std::memcpy(got.data() + static_cast<std::size_t>(r.pos) * V,
                            z + static_cast<std::size_t>(li) * V, V * sizeof(float));
            ++li;
        }
    }
    EXPECT_EQ(std::memcmp(got.data(), ref.data(), got.size() * sizeof(float)), 0) << GetParam();
}

INSTANTIATE_TEST_SUITE_P(Families, PagedDecoderFamilies,
                         ::testing::Values("gpt2", "llama", "gptj", "alibi", "llama_qk_norm",
                                           "attn_only", "sqrelu", "alibi_norm_elu",
                                           "t5_logit_scale"));

TEST(AttentionPaged, EqualsContiguousAttentionBitwise) {
    set_thread_count(2);
    const int H = 4, Hkv = 2, D = 16, T = 300, block = 8, nb = (T + block - 1) / block;
    std::mt19937 g(5);
    std::normal_distribution<float> n(0, 1);
    std::vector<float> q(H * D), kc(Hkv * T * D), vc(Hkv * T * D);
    for (auto* v : {&q, &kc, &vc})
        for (auto& x : *v) x = n(g);
    // The same keys scattered over a pool in reverse block order.
    std::vector<std::int32_t> table(nb);
    for (int i = 0; i < nb; ++i) table[i] = nb - 1 - i;
    std::vector<float> kp(static_cast<std::size_t>(nb) * Hkv * block * D), vp(kp.size());
    for (int h = 0; h < Hkv; ++h)
        for (int t = 0; t < T; ++t) {
            const std::size_t at =
                ((static_cast<std::size_t>(table[t / block]) * Hkv + h) * block + t % block) * D;
            std::memcpy(&kp[at], &kc[(static_cast<std::size_t>(h) * T + t) * D], D * 4);
            std::memcpy(&vp[at], &vc[(static_cast<std::size_t>(h) * T + t) * D], D * 4);
        }
    std::vector<float> slopes = {0.5f, 0.25f, 0.125f, 0.0625f};
    for (const float* s :
         {static_cast<const float*>(nullptr), static_cast<const float*>(slopes.data())})
        for (int len : {1, 7, 8, 257, 300}) {
            std::vector<float> want(H * D), got(H * D);
            kernels::attention_decode(want.data(), q.data(), H * D, kc.data(), vc.data(), nullptr,
                                      1, len, T, H, Hkv, D, s);
            const std::int32_t* tables[1] = {table.data()};
            kernels::attention_paged(got.data(), q.data(), H * D, kp.data(), vp.data(), tables,
                                     &len, 1, block, H, Hkv, D, s);
            EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * 4), 0) << len;
        }
}

}  // namespace
}  // namespace meshlm
