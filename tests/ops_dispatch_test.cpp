// The device-tagged view ops (kernels/ops/) on Device::cpu against the raw CPU kernels they
// dispatch to: the same inputs give bitwise the same outputs, so the views pass every argument
// through unchanged. Then the errors: views on different devices, a wrong dtype or shape, and a
// CUDA request in a CPU-only build, each named.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "kernel_check.h"
#include "meshlm/core/error.h"
#include "meshlm/kernels/device.h"
#include "meshlm/kernels/device_buffer.h"
#include "meshlm/kernels/kernels.h"
#include "meshlm/kernels/ops/activation.h"
#include "meshlm/kernels/ops/adafactor.h"
#include "meshlm/kernels/ops/adamw.h"
#include "meshlm/kernels/ops/attention.h"
#include "meshlm/kernels/ops/attention_act.h"
#include "meshlm/kernels/ops/attention_decode.h"
#include "meshlm/kernels/ops/bf16.h"
#include "meshlm/kernels/ops/bias_backward.h"
#include "meshlm/kernels/ops/clip.h"
#include "meshlm/kernels/ops/cross_entropy.h"
#include "meshlm/kernels/ops/distance_bias.h"
#include "meshlm/kernels/ops/dropout.h"
#include "meshlm/kernels/ops/embedding.h"
#include "meshlm/kernels/ops/gemm.h"
#include "meshlm/kernels/ops/layernorm.h"
#include "meshlm/kernels/ops/linear.h"
#include "meshlm/kernels/ops/linear_decode.h"
#include "meshlm/kernels/ops/lion.h"
#include "meshlm/kernels/ops/qk_norm.h"
#include "meshlm/kernels/ops/residual.h"
#include "meshlm/kernels/ops/rmsnorm.h"
#include "meshlm/kernels/ops/rope.h"
#include "meshlm/kernels/vocab_parallel.h"
#include "meshlm/train/learner.h"
#include "test_util.h"

namespace meshlm {
namespace {

using test::accumulate_pattern;
using test::bitwise_equal;
using test::expect_error;
using test::randn;

Tensor view(std::vector<float>& v, Shape s) {
    return Tensor{v.data(), DType::f32, s, Device::cpu};
}
Tensor view(std::vector<std::int32_t>& v, Shape s) {
    return Tensor{v.data(), DType::i32, s, Device::cpu};
}
Tensor view(std::vector<std::uint16_t>& v, Shape s) {
    return Tensor{v.data(), DType::bf16, s, Device::cpu};
}

TEST(OpsDispatch, GemmF32AndBf16) {
    const int M = 37, N = 29, K = 45;
    for (bool ta : {false, true})
        for (bool tb : {false, true}) {
            auto A = randn(M * K, 1), B = randn(K * N, 2);
            const Shape sa = ta ? Shape{K, M} : Shape{M, K}, sb = tb ? Shape{N, K} : Shape{K, N};
            auto want = randn(M * N, 3), got = want;
            kernels::gemm(ta, tb, M, N, K, 0.5f, A.data(), int(sa[1]), B.data(), int(sb[1]), 0.25f,
                          want.data(), N);
            ops::gemm(view(got, {M, N}), view(A, sa), ta, view(B, sb), tb, 0.5f, 0.25f);
            EXPECT_TRUE(bitwise_equal(got, want)) << "f32 " << ta << tb;

            std::vector<std::uint16_t> A16(A.size()), B16(B.size());
            kernels::to_bf16(A16.data(), A.data(), A.size());
            kernels::to_bf16(B16.data(), B.data(), B.size());
            want.assign(M * N, 0.f);
            got = want;
            kernels::gemm_bf16(ta, tb, M, N, K, 1.f, A16.data(), int(sa[1]), B16.data(), int(sb[1]),
                               0.f, want.data(), N);
            ops::gemm(view(got, {M, N}), view(A16, sa), ta, view(B16, sb), tb);
            EXPECT_TRUE(bitwise_equal(got, want)) << "bf16 " << ta << tb;
        }
}

TEST(OpsDispatch, LayerNormAndRmsNorm) {
    const int N = 19, C = 72;
    auto x = randn(N * C, 4), w = randn(C, 5, 0.5f, 1.f), b = randn(C, 6), dout = randn(N * C, 7);
    for (bool with_b : {true, false}) {
        const Tensor bv = with_b ? view(b, {C}) : Tensor{};
        const float* bp = with_b ? b.data() : nullptr;
        std::vector<float> o1(N * C), m1(N), r1(N), o2(N * C), m2(N), r2(N);
        kernels::layernorm_forward(o1.data(), m1.data(), r1.data(), x.data(), w.data(), bp, N, C,
                                   1e-5f);
        ops::layernorm_forward(view(o2, {N, C}), view(m2, {N}), view(r2, {N}), view(x, {N, C}),
                               view(w, {C}), bv, 1e-5f);
        EXPECT_TRUE(bitwise_equal(o1, o2) && bitwise_equal(m1, m2) && bitwise_equal(r1, r2));
        auto dx1 = accumulate_pattern(N * C), dw1 = accumulate_pattern(C), db1 = dw1;
        auto dx2 = dx1, dw2 = dw1, db2 = db1;
        kernels::layernorm_backward(dx1.data(), dw1.data(), with_b ? db1.data() : nullptr,
                                    dout.data(), x.data(), w.data(), m1.data(), r1.data(), N, C);
        ops::layernorm_backward(view(dx2, {N, C}), view(dw2, {C}),
                                with_b ? view(db2, {C}) : Tensor{}, view(dout, {N, C}),
                                view(x, {N, C}), view(w, {C}), view(m1, {N}), view(r1, {N}));
        EXPECT_TRUE(bitwise_equal(dx1, dx2) && bitwise_equal(dw1, dw2) && bitwise_equal(db1, db2));

        kernels::rmsnorm_forward(o1.data(), r1.data(), x.data(), w.data(), bp, N, C, 1e-6f);
        ops::rmsnorm_forward(view(o2, {N, C}), view(r2, {N}), view(x, {N, C}), view(w, {C}), bv,
                             1e-6f);
        EXPECT_TRUE(bitwise_equal(o1, o2) && bitwise_equal(r1, r2));
        dx1 = accumulate_pattern(N * C), dw1 = accumulate_pattern(C), db1 = dw1;
        dx2 = dx1, dw2 = dw1, db2 = db1;
        kernels::rmsnorm_backward(dx1.data(), dw1.data(), with_b ? db1.data() : nullptr,
                                  dout.data(), x.data(), w.data(), r1.data(), N, C);
        ops::rmsnorm_backward(view(dx2, {N, C}), view(dw2, {C}), with_b ? view(db2, {C}) : Tensor{},
                              view(dout, {N, C}), view(x, {N, C}), view(w, {C}), view(r1, {N}));
        EXPECT_TRUE(bitwise_equal(dx1, dx2) && bitwise_equal(dw1, dw2) && bitwise_equal(db1, db2));
    }
}

TEST(OpsDispatch, ActivationsAndGlu) {
    const int N = 7, F = 45;
    auto x = randn(N * 2 * F, 8, 2.f), dout = randn(N * 2 * F, 9);
    for (kernels::Act act : {kernels::Act::gelu_tanh, kernels::Act::gelu, kernels::Act::relu,
                             kernels::Act::sqrelu, kernels::Act::silu}) {
        std::vector<float> a(x.size()), b(x.size());
        kernels::activation_forward(act, a.data(), x.data(), x.size());
        ops::activation_forward(act, view(b, {N, 2 * F}), view(x, {N, 2 * F}));
        EXPECT_TRUE(bitwise_equal(a, b));
        kernels::activation_backward(act, a.data(), x.data(), dout.data(), x.size());
        ops::activation_backward(act, view(b, {N * 2 * F}), view(x, {N * 2 * F}),
                                 view(dout, {N * 2 * F}));
        EXPECT_TRUE(bitwise_equal(a, b));

        std::vector<float> o1(N * F), o2(N * F);
        kernels::glu_forward(act, o1.data(), x.data(), N, F);
        ops::glu_forward(act, view(o2, {N, F}), view(x, {N, 2 * F}));
        EXPECT_TRUE(bitwise_equal(o1, o2));
        kernels::glu_backward(act, a.data(), x.data(), dout.data(), N, F);
        ops::glu_backward(act, view(b, {N, 2 * F}), view(x, {N, 2 * F}), view(dout, {N, F}));
        EXPECT_TRUE(bitwise_equal(a, b));
    }
}

TEST(OpsDispatch, CrossEntropy) {
    const int N = 9, V = 101;
    auto logits = randn(N * V, 10, 3.f);
    std::vector<std::int32_t> targets(N);
    for (int n = 0; n < N; ++n) targets[n] = n == 4 ? -1 : (n * 37) % V;
    for (float scale : {0.f, 1.f / N}) {
        auto l1 = logits, l2 = logits;
        std::vector<float> loss1(N), loss2(N);
        kernels::softmax_cross_entropy(l1.data(), loss1.data(), targets.data(), N, V, V, scale,
                                       1e-4f);
        ops::softmax_cross_entropy(view(l2, {N, V}), view(loss2, {N}), view(targets, {N}), scale,
                                   1e-4f);
        EXPECT_TRUE(bitwise_equal(l1, l2) && bitwise_equal(loss1, loss2));
    }
}

TEST(OpsDispatch, AdamW) {
    const int n = 1000;
    auto p1 = randn(n, 11), g = randn(n, 12), m1 = randn(n, 13, 0.1f), v1 = randn(n, 14, 0.1f);
    for (auto& v : v1) v = std::fabs(v);
    auto p2 = p1, m2 = m1, v2 = v1;
    kernels::adamw(p1.data(), g.data(), m1.data(), v1.data(), n, 3e-4f, 0.9f, 0.95f, 1e-8f, 0.1f,
                   7);
    ops::adamw(view(p2, {n}), view(g, {n}), view(m2, {n}), view(v2, {n}),
               {.lr = 3e-4f,
                .beta1 = 0.9f,
                .beta2 = 0.95f,
                .eps = 1e-8f,
                .weight_decay = 0.1f,
                .step = 7});
    EXPECT_TRUE(bitwise_equal(p1, p2) && bitwise_equal(m1, m2) && bitwise_equal(v1, v2));
}

TEST(OpsDispatch, Rope) {
    const int N = 12, T = 6, H = 3, D = 16, W = 5 * D, rope_dim = 12;
    auto x = randn(N * W, 15), inv = randn(rope_dim / 2, 16, 0.1f, 0.3f);
    std::vector<std::int32_t> pos(N);
    for (int n = 0; n < N; ++n) pos[n] = 3 * n + 1;
    for (bool interleaved : {false, true})
        for (bool with_pos : {false, true}) {
            auto a = x, b = x;
            const std::int32_t* pp = with_pos ? pos.data() : nullptr;
            const ops::RopeHeads r{.col0 = D,
                                   .heads = H,
                                   .head_dim = D,
                                   .rope_dim = rope_dim,
                                   .interleaved = interleaved,
                                   .T = T};
            const Tensor pv = with_pos ? view(pos, {N}) : Tensor{};
            kernels::rope_forward(a.data() + D, W, pp, N, T, H, D, rope_dim, interleaved,
                                  inv.data());
            ops::rope_forward(view(b, {N, W}), pv, view(inv, {rope_dim / 2}), r);
            EXPECT_TRUE(bitwise_equal(a, b));
            kernels::rope_backward(a.data() + D, W, pp, N, T, H, D, rope_dim, interleaved,
                                   inv.data());
            ops::rope_backward(view(b, {N, W}), pv, view(inv, {rope_dim / 2}), r);
            EXPECT_TRUE(bitwise_equal(a, b));
        }
}

TEST(OpsDispatch, Embedding) {
    const int N = 10, T = 5, V = 13, C = 24, P = 8;
    auto wte = randn(V * C, 17), wpe = randn(P * C, 18), dout = randn(N * C, 19);
    std::vector<std::int32_t> tok(N);
    for (int n = 0; n < N; ++n) tok[n] = (n * 5) % V;
    tok[3] = tok[7];  // a repeated token: its gradient rows add up
    std::vector<float> o1(N * C), o2(N * C);
    kernels::embedding_forward_vocab_range(o1.data(), tok.data(), wte.data(), 0, V, N, C);
    kernels::position_embedding_forward(o1.data(), wpe.data(), N, T, C);
    ops::embedding_forward(view(o2, {N, C}), view(tok, {N}), view(wte, {V, C}), view(wpe, {P, C}),
                           T);
    EXPECT_TRUE(bitwise_equal(o1, o2));
    auto dwte1 = accumulate_pattern(V * C), dwpe1 = accumulate_pattern(P * C);
    auto dwte2 = dwte1, dwpe2 = dwpe1;
    kernels::embedding_backward_vocab_range(dwte1.data(), dout.data(), tok.data(), 0, V, N, C);
    kernels::position_embedding_backward(dwpe1.data(), dout.data(), N, T, C);
    ops::embedding_backward(view(dwte2, {V, C}), view(dwpe2, {P, C}), view(dout, {N, C}),
                            view(tok, {N}), T);
    EXPECT_TRUE(bitwise_equal(dwte1, dwte2) && bitwise_equal(dwpe1, dwpe2));
}

// A vocabulary-parallel shard (rows of tokens [v0, v0 + Vl)) and the position half on its own.
TEST(OpsDispatch, EmbeddingShardAndPositions) {
    const int N = 12, T = 4, v0 = 5, Vl = 6, C = 16, P = 6;
    auto wte = randn(Vl * C, 22), wpe = randn(P * C, 23), dout = randn(N * C, 24);
    std::vector<std::int32_t> tok(N);
    for (int n = 0; n < N; ++n) tok[n] = (n * 7) % 17;  // in and out of the shard
    std::vector<float> o1(N * C), o2(N * C, 1.f);
    kernels::embedding_forward_vocab_range(o1.data(), tok.data(), wte.data(), v0, Vl, N, C);
    kernels::position_embedding_forward(o1.data(), wpe.data(), N, T, C);
    ops::embedding_forward(view(o2, {N, C}), view(tok, {N}), view(wte, {Vl, C}), Tensor{}, T, v0);
    ops::position_embedding_forward(view(o2, {N, C}), view(wpe, {P, C}), T);
    EXPECT_TRUE(bitwise_equal(o1, o2));
    auto dwte1 = accumulate_pattern(Vl * C), dwpe1 = accumulate_pattern(P * C);
    auto dwte2 = dwte1, dwpe2 = dwpe1;
    kernels::embedding_backward_vocab_range(dwte1.data(), dout.data(), tok.data(), v0, Vl, N, C);
    kernels::position_embedding_backward(dwpe1.data(), dout.data(), N, T, C);
    ops::embedding_backward(view(dwte2, {Vl, C}), Tensor{}, view(dout, {N, C}), view(tok, {N}), T,
                            v0);
    ops::position_embedding_backward(view(dwpe2, {P, C}), view(dout, {N, C}), T);
    EXPECT_TRUE(bitwise_equal(dwte1, dwte2) && bitwise_equal(dwpe1, dwpe2));
    expect_error(
        [&] {
            ops::position_embedding_forward(view(o2, {N, C}), view(wpe, {P, C}), 7);
        },
        "position_embedding_forward: T = 7 needs 1 <= T <= 6 (the rows of wpe)");
}

TEST(OpsDispatch, Attention) {
    const int B = 2, T = 70, H = 4, Hkv = 2, D = 16, W = (H + 2 * Hkv) * D;
    auto qkv = randn(B * T * W, 20), dout = randn(B * T * H * D, 21);
    std::vector<float> slopes = {0.5f, 0.25f, 0.125f, 0.0625f};
    for (bool alibi : {false, true}) {
        const float* sp = alibi ? slopes.data() : nullptr;
        const Tensor sv = alibi ? view(slopes, {H}) : Tensor{};
        std::vector<float> o1(B * T * H * D), l1(B * H * T), o2 = o1, l2 = l1;
        kernels::attention_forward(o1.data(), l1.data(), qkv.data(), B, T, H, Hkv, D, sp, nullptr,
                                   0.2f);
        ops::attention_forward(view(o2, {B, T, H * D}), view(l2, {B, H, T}), view(qkv, {B, T, W}),
                               sv, {.H = H, .Hkv = Hkv, .scale = 0.2f});
        EXPECT_TRUE(bitwise_equal(o1, o2) && bitwise_equal(l1, l2));
        std::vector<float> d1(qkv.size()), d2(qkv.size());
        kernels::attention_backward(d1.data(), dout.data(), o1.data(), l1.data(), qkv.data(), B, T,
                                    H, Hkv, D, sp, nullptr, 0.2f);
        ops::attention_backward(view(d2, {B, T, W}), view(dout, {B, T, H * D}),
                                view(o1, {B, T, H * D}), view(l1, {B, H, T}), view(qkv, {B, T, W}),
                                sv, {.H = H, .Hkv = Hkv, .scale = 0.2f});
        EXPECT_TRUE(bitwise_equal(d1, d2));
    }
}

// Dropout on the probabilities reaches the kernel: the same mask as the kernel's, and not the
// undropped output.
TEST(OpsDispatch, AttentionDropout) {
    const int B = 2, T = 33, H = 4, Hkv = 4, D = 8, W = (H + 2 * Hkv) * D;
    auto qkv = randn(B * T * W, 25), dout = randn(B * T * H * D, 26);
    const kernels::AttnDropout drop{
        .rate = 0.3f, .seed = 7, .stream = 11, .row0 = 4, .head0 = 0, .n_head = H};
    const ops::AttentionHeads heads{.H = H, .Hkv = Hkv, .dropout = &drop};
    std::vector<float> o1(B * T * H * D), l1(B * H * T), o2 = o1, l2 = l1, o0 = o1, l0 = l1;
    kernels::attention_forward(o1.data(), l1.data(), qkv.data(), B, T, H, Hkv, D, nullptr, &drop);
    ops::attention_forward(view(o2, {B, T, H * D}), view(l2, {B, H, T}), view(qkv, {B, T, W}),
                           Tensor{}, heads);
    ops::attention_forward(view(o0, {B, T, H * D}), view(l0, {B, H, T}), view(qkv, {B, T, W}),
                           Tensor{}, {.H = H, .Hkv = Hkv});
    EXPECT_TRUE(bitwise_equal(o1, o2) && bitwise_equal(l1, l2));
    EXPECT_FALSE(bitwise_equal(o0, o2));
    std::vector<float> d1(qkv.size()), d2(qkv.size());
    kernels::attention_backward(d1.data(), dout.data(), o1.data(), l1.data(), qkv.data(), B, T, H,
                                Hkv, D, nullptr, &drop);
    ops::attention_backward(view(d2, {B, T, W}), view(dout, {B, T, H * D}), view(o1, {B, T, H * D}),
                            view(l1, {B, H, T}), view(qkv, {B, T, W}), Tensor{}, heads);
    EXPECT_TRUE(bitwise_equal(d1, d2));
}

// The ops that took T5's bias and Adafactor's statistics onto the GPU name bad views: a bucket
// per distance, rows and columns both present.
TEST(OpsDispatch, DistanceBiasAndAdafactorScalesNameBadViews) {
    std::vector<float> dist(2 * 5), table(2 * 3), stats(6), scales(6);
    std::vector<std::int32_t> buckets(4);
    expect_error(
        [&] {
            ops::distance_bias_expand(view(dist, {2, 5}), view(table, {2, 3}), view(buckets, {4}));
        },
        "distance_bias_expand: buckets has shape [4], expected [5]");
    expect_error(
        [&] {
            ops::distance_bias_fold(view(table, {3, 2}), view(dist, {2, 5}), view(buckets, {4}));
        },
        "distance_bias_fold: grad_table has shape [3, 2], expected [2, 2]");
    expect_error(
        [&] {
            ops::adafactor_factored_scales(view(stats, {6}), view(scales, {6}), view(scales, {6}),
                                           6, 0.8f);
        },
        "adafactor_factored_scales: 6 rows of 6 statistics");
}

// The end of a residual branch against its definition written out here, each bias present or
// not: ((out + b1) + b2) + r, in that order.
TEST(OpsDispatch, BiasResidual) {
    const int N = 7, C = 37;
    auto out0 = randn(N * C, 27), r = randn(N * C, 28), b1 = randn(C, 29), b2 = randn(C, 30);
    for (int mask = 0; mask < 4; ++mask) {
        const bool h1 = mask & 1, h2 = mask & 2;
        std::vector<float> want = out0, got = out0;
        for (int n = 0; n < N; ++n)
            for (int c = 0; c < C; ++c) {
                float& o = want[n * C + c];
                if (h1) o = o + b1[c];
                if (h2) o = o + b2[c];
                o = o + r[n * C + c];
            }
        ops::bias_residual(view(got, {N, C}), h1 ? view(b1, {C}) : Tensor{},
                           h2 ? view(b2, {C}) : Tensor{}, view(r, {N, C}));
        EXPECT_TRUE(bitwise_equal(want, got)) << "biases " << mask;
    }
    std::vector<float> out = out0;
    expect_error(
        [&] {
            ops::bias_residual(view(out, {N, C}), view(b1, {C - 1}), Tensor{}, view(r, {N, C}));
        },
        "bias_residual: b1 has shape [36], expected [37]");
}

// C, A and B as column blocks of wider rows (the model's chunked bf16 head writes y's columns
// o0.. with ldc = O): the strides reach the kernel as lda / ldb / ldc.
TEST(OpsDispatch, GemmRowStrides) {
    const int M = 11, N = 7, K = 9, WA = 20, WB = 13, WC = 17;  // the wide rows
    auto A = randn(M * WA, 31), B = randn(K * WB, 32), C0 = randn(M * WC, 33);
    auto want = C0, got = C0;
    kernels::gemm(false, false, M, N, K, 1.f, A.data() + 3, WA, B.data() + 5, WB, 1.f,
                  want.data() + 8, WC);
    const Tensor c = view(got, {M, WC}).columns(8, N);
    EXPECT_EQ(c.ld, WC);
    ops::gemm(c, view(A, {M, WA}).columns(3, K), false, view(B, {K, WB}).columns(5, N), false, 1.f,
              1.f);
    EXPECT_TRUE(bitwise_equal(got, want));
    // A block of a block keeps the outer stride; all columns from 0 is the dense view.
    EXPECT_EQ(c.columns(2, 3).ld, WC);
    EXPECT_TRUE(view(got, {M, WC}).columns(0, WC).dense());

    std::vector<std::uint16_t> A16(A.size()), B16(B.size());
    kernels::to_bf16(A16.data(), A.data(), A.size());
    kernels::to_bf16(B16.data(), B.data(), B.size());
    want = got = C0;
    kernels::gemm_bf16(false, true, M, N, K, 1.f, A16.data(), WA, B16.data() + 2, WB, 0.f,
                       want.data() + 1, WC);
    ops::gemm(view(got, {M, WC}).columns(1, N), view(A16, {M, WA}).columns(0, K), false,
              view(B16, {N, WB}).columns(2, K), true);
    EXPECT_TRUE(bitwise_equal(got, want));
}

// rope honours a row stride too: heads of a column block rotate like col0 on the whole rows.
TEST(OpsDispatch, RopeOnColumnBlock) {
    const int N = 8, T = 4, D = 8, W = 4 * D;
    auto x = randn(N * W, 34), inv = randn(D / 2, 35, 0.1f, 0.3f), y = x;
    ops::rope_forward(view(x, {N, W}), Tensor{}, view(inv, {D / 2}),
                      {.col0 = D, .heads = 2, .head_dim = D, .rope_dim = D, .T = T});
    ops::rope_forward(view(y, {N, W}).columns(D, 2 * D), Tensor{}, view(inv, {D / 2}),
                      {.heads = 2, .head_dim = D, .rope_dim = D, .T = T});
    EXPECT_TRUE(bitwise_equal(x, y));
}

TEST(OpsDispatch, Linear) {
    const int N = 13, I = 24, O = 19;
    auto x = randn(N * I, 36), W = randn(O * I, 37), b = randn(O, 38), dy = randn(N * O, 39);
    for (bool with_b : {true, false}) {
        const Tensor bv = with_b ? view(b, {O}) : Tensor{};
        std::vector<float> y1(N * O), y2(N * O);
        kernels::linear_forward(y1.data(), x.data(), W.data(), with_b ? b.data() : nullptr, N, I,
                                O);
        ops::linear_forward(view(y2, {N, O}), view(x, {N, I}), view(W, {O, I}), bv);
        EXPECT_TRUE(bitwise_equal(y1, y2));
        for (bool with_dx : {true, false}) {
            auto dx1 = accumulate_pattern(N * I), dW1 = accumulate_pattern(O * I);
            auto db1 = accumulate_pattern(O), dx2 = dx1, dW2 = dW1, db2 = db1;
            kernels::linear_backward(with_dx ? dx1.data() : nullptr, dW1.data(),
                                     with_b ? db1.data() : nullptr, dy.data(), x.data(), W.data(),
                                     N, I, O);
            ops::linear_backward(with_dx ? view(dx2, {N, I}) : Tensor{}, view(dW2, {O, I}),
                                 with_b ? view(db2, {O}) : Tensor{}, view(dy, {N, O}),
                                 view(x, {N, I}), view(W, {O, I}));
            EXPECT_TRUE(bitwise_equal(dx1, dx2) && bitwise_equal(dW1, dW2) &&
                        bitwise_equal(db1, db2));
        }
    }
    auto y1 = randn(N * O, 40), y2 = y1;
    for (int n = 0; n < N; ++n)
        for (int o = 0; o < O; ++o) y1[n * O + o] += b[o];
    ops::add_bias(view(y2, {N, O}), view(b, {O}));
    EXPECT_TRUE(bitwise_equal(y1, y2));
    expect_error(
        [&] {
            ops::linear_forward(view(y2, {N, O}), view(x, {N, I}), view(W, {I, O}), Tensor{});
        },
        "linear_forward: W has shape [24, 19], expected [O, 24]");
}

// Ops over dense views name a strided one; bad strides and blocks are refused where made.
TEST(OpsDispatch, RowStrideCheckedAndRefusedByDenseOps) {
    std::vector<float> x(8 * 16), out(8 * 8), mean(8), rstd(8), w(8);
    const Tensor half = view(x, {8, 16}).columns(8, 8);
    EXPECT_FALSE(half.dense());
    expect_error(
        [&] {
            ops::layernorm_forward(view(out, {8, 8}), view(mean, {8}), view(rstd, {8}), half,
                                   view(w, {8}), Tensor{}, 1e-5f);
        },
        "layernorm_forward: x has row stride 16; expected a dense view");
    expect_error([&] { ops::add_bias(half, view(w, {8})); }, "add_bias: y has row stride 16");
    expect_error([&] { kernels::copy(view(out, {8, 8}), half); }, "copy: src has row stride 16");
    expect_error([&] { (void)half.columns(4, 5); }, "columns [4, 9) of a [8, 8] view");
    expect_error([&] { (void)view(w, {8}).columns(0, 1); }, "columns of a [8] view");
    Tensor narrow = view(x, {8, 8});
    narrow.ld = 4;  // rows would overlap
    expect_error(
        [&] {
            ops::gemm(view(out, {8, 8}), narrow, false, view(x, {8, 8}), false);
        },
        "gemm: A has row stride 4, less than its 8 columns");
    Tensor flat = view(w, {8});
    flat.ld = 8;  // a stride on a 1-D view
    expect_error([&] { ops::add_bias(view(out, {8, 8}), flat); }, "add_bias: b has row stride 8");
}

TEST(OpsDispatch, WrongDeviceDtypeOrShapeIsNamed) {
    std::vector<float> x(64), out(64), mean(8), rstd(8), w(8);
    Tensor wc = view(w, {8});
    wc.device = Device::cuda;  // checked before any data is touched
    expect_error(
        [&] {
            ops::layernorm_forward(view(out, {8, 8}), view(mean, {8}), view(rstd, {8}),
                                   view(x, {8, 8}), wc, Tensor{}, 1e-5f);
        },
        "layernorm_forward: w is on cuda but x is on cpu");
    std::vector<std::int32_t> xi(64);
    expect_error(
        [&] {
            ops::layernorm_forward(view(out, {8, 8}), view(mean, {8}), view(rstd, {8}),
                                   view(xi, {8, 8}), view(w, {8}), Tensor{}, 1e-5f);
        },
        "layernorm_forward: x is i32, expected f32");
    expect_error(
        [&] {
            ops::layernorm_forward(view(out, {8, 8}), view(mean, {8}), view(rstd, {8}),
                                   view(x, {8, 8}), view(w, {4}), Tensor{}, 1e-5f);
        },
        "layernorm_forward: w has shape [4], expected [8]");
    expect_error(
        [&] {
            ops::gemm(view(out, {8, 8}), view(x, {8, 8}), false, view(w, {8, 1}), false);
        },
        "gemm: C has shape [8, 8], expected [8, 1]");
    expect_error(
        [&] {
            ops::gemm(view(out, {8, 8}), view(x, {8, 4}), false, view(w, {8, 1}), false);
        },
        "inner dimensions differ");
    std::vector<std::uint16_t> h(64);
    expect_error(
        [&] {
            ops::gemm(view(out, {8, 8}), view(x, {8, 8}), false, view(h, {8, 8}), false);
        },
        "gemm: B is bf16, expected f32");
    std::vector<std::int32_t> t(8);
    expect_error(
        [&] {
            ops::softmax_cross_entropy(view(x, {8, 8}), view(mean, {8}), view(rstd, {8}), 1.f);
        },
        "softmax_cross_entropy: targets is f32, expected i32");
    expect_error(
        [&] {
            ops::attention_forward(view(out, {1, 8, 8}), view(mean, {1, 1, 8}), view(x, {1, 8, 8}),
                                   Tensor{}, {.H = 3, .Hkv = 2});
        },
        "multiple of Hkv");
    expect_error(
        [&] { ops::adamw(view(x, {64}), view(out, {64}), view(mean, {8}), view(x, {64}), {}); },
        "adamw: m has shape [8], expected [64]");
    expect_error(
        [&] {
            ops::glu_forward(kernels::Act::silu, view(out, {8, 4}), view(x, {8, 8}));
            ops::glu_forward(kernels::Act::silu, view(out, {8, 8}), Tensor{});
        },
        "glu_forward: h has no data");
}

// --- Optimizer passes, clipping, bf16 conversions, residual ------------------------------------

TEST(OpsDispatch, LionAndAdafactor) {
    const int n = 1000;
    auto p1 = randn(n, 30), g = randn(n, 31), m1 = randn(n, 32, 0.1f);
    auto p2 = p1, m2 = m1;
    kernels::lion(p1.data(), g.data(), m1.data(), n, 3e-4f, 0.9f, 0.99f, 0.1f, 0.5f);
    ops::lion(
        view(p2, {n}), view(g, {n}), view(m2, {n}),
        {.lr = 3e-4f, .beta1 = 0.9f, .beta2 = 0.99f, .weight_decay = 0.1f, .grad_scale = 0.5f});
    EXPECT_TRUE(bitwise_equal(p1, p2) && bitwise_equal(m1, m2));

    auto v1 = randn(n, 33, 0.1f);
    for (auto& v : v1) v = std::fabs(v);
    auto v2 = v1;
    const double s1 = kernels::adafactor_moment(v1.data(), g.data(), n, 0.8f, 1e-30f);
    EXPECT_EQ(ops::adafactor_moment(view(v2, {n}), view(g, {n}), 0.8f, 1e-30f), s1);
    kernels::adafactor_apply(p1.data(), g.data(), v1.data(), n, 1e-2f, 0.99f);
    ops::adafactor_apply(view(p2, {n}), view(g, {n}), view(v2, {n}), 1e-2f, 0.99f);
    EXPECT_TRUE(bitwise_equal(v1, v2) && bitwise_equal(p1, p2));

    // 1000 elements of a [*, 30] block from element 7, at (2, 3) of a [40, 36] tensor.
    const kernels::MatrixRun run{n, 7, 30, 2, 3};
    auto rs = randn(40, 34, 0.3f, 1.f), cs = randn(36, 35, 0.3f, 1.f);
    std::vector<double> r1(40, 0.5), c1(36, 0.25), r2 = r1, c2 = c1;
    kernels::adafactor_factored_sums(g.data(), run, 1e-30f, r1.data(), c1.data());
    const ops::AdafactorRun orun{.first = 7, .width = 30, .row0 = 2, .col0 = 3};
    ops::adafactor_factored_sums(view(g, {n}), orun, 1e-30f, r2, c2);
    EXPECT_TRUE(r1 == r2 && c1 == c2);
    EXPECT_EQ(ops::adafactor_factored_sumsq(view(g, {n}), orun, view(rs, {40}), view(cs, {36})),
              kernels::adafactor_factored_sumsq(g.data(), run, rs.data(), cs.data()));
    kernels::adafactor_factored_apply(p1.data(), g.data(), run, rs.data(), cs.data(), 1e-2f, 0.9f);
    ops::adafactor_factored_apply(view(p2, {n}), view(g, {n}), orun, view(rs, {40}), view(cs, {36}),
                                  1e-2f, 0.9f);
    EXPECT_TRUE(bitwise_equal(p1, p2));
}

TEST(OpsDispatch, ClippingAndResidual) {
    const int n = 3001;
    auto x1 = randn(n, 36, 2.f), y = randn(n, 37), x2 = x1;
    EXPECT_EQ(ops::sum_squares(view(x2, {n})), kernels::sum_squares(x1.data(), n));
    kernels::clamp(x1.data(), 1.5f, n);
    ops::clamp(view(x2, {n}), 1.5f);
    kernels::scale(x1.data(), 0.3f, n);
    ops::scale(view(x2, {n}), 0.3f);
    EXPECT_TRUE(bitwise_equal(x1, x2));
    std::vector<float> o1(n), o2(n);
    kernels::residual_forward(o1.data(), x1.data(), y.data(), n);
    ops::residual_forward(view(o2, {n}), view(x2, {n}), view(y, {n}));
    EXPECT_TRUE(bitwise_equal(o1, o2));
}

TEST(OpsDispatch, Bf16Conversions) {
    const int R = 9, C = 20, ld = 31, col0 = 5, n = R * ld;
    auto x = randn(n, 38, 3.f);
    std::vector<std::uint16_t> h1(n), h2(n), r1(R * C), r2(R * C);
    kernels::to_bf16(h1.data(), x.data(), n);
    ops::to_bf16(view(h2, {R, ld}), view(x, {R, ld}));
    kernels::to_bf16_rows(r1.data(), x.data() + col0, R, C, ld);
    ops::to_bf16_rows(view(r2, {R, C}), view(x, {R, ld}), col0);
    EXPECT_TRUE(h1 == h2 && r1 == r2);
    std::vector<float> f1(n), f2(n), w1(R * C), w2(R * C), b1(n), b2(n);
    kernels::round_bf16(f1.data(), x.data(), n);
    ops::round_bf16(view(f2, {n}), view(x, {n}));
    kernels::from_bf16(b1.data(), h1.data(), n);
    ops::from_bf16(view(b2, {R, ld}), view(h1, {R, ld}));
    kernels::from_bf16_rows(w1.data(), h1.data() + col0, R, C, ld);
    ops::from_bf16_rows(view(w2, {R, C}), view(h1, {R, ld}), col0);
    EXPECT_TRUE(bitwise_equal(f1, f2) && bitwise_equal(b1, b2) && bitwise_equal(w1, w2));
    std::vector<float> in_place(n);
    std::memcpy(in_place.data(), h1.data(), n * sizeof(std::uint16_t));
    ops::from_bf16_in_place(view(in_place, {n}));
    EXPECT_TRUE(bitwise_equal(in_place, b1));
}

// One bad argument per op: the message names the op and the argument.
TEST(OpsDispatch, OptimizerAndConversionErrorsAreNamed) {
    std::vector<float> a(64), b(64), c(8);
    std::vector<std::uint16_t> h(64);
    std::vector<double> rows(8), cols(4);
    expect_error([&] { ops::lion(view(a, {64}), view(b, {64}), view(c, {8}), {}); },
                 "lion: m has shape [8], expected [64]");
    expect_error(
        [&] { ops::adafactor_factored_sums(view(a, {64}), {.width = 8}, 1e-30f, rows, cols); },
        "adafactor_factored_sums: col_sums has 4 elements, the run needs 8");
    expect_error(
        [&] {
            ops::adafactor_factored_sumsq(view(a, {64}), {.width = 8}, view(c, {4}), view(c, {8}));
        },
        "adafactor_factored_sumsq: row_scale has 4 elements, the run needs 8");
    expect_error(
        [&] {
            ops::adafactor_factored_apply(view(a, {64}), view(b, {64}), {.width = 0}, view(c, {8}),
                                          view(c, {8}), 1.f, 1.f);
        },
        "adafactor_factored_apply: run {first 0, width 0");
    expect_error([&] { ops::adafactor_moment(view(a, {64}), view(h, {64}), 0.8f, 1e-30f); },
                 "adafactor_moment: g is bf16, expected f32");
    expect_error([&] { ops::adafactor_apply(view(a, {64}), view(b, {64}), view(c, {8}), 1, 1); },
                 "adafactor_apply: v has shape [8], expected [64]");
    expect_error([&] { ops::sum_squares(view(h, {64})); }, "sum_squares: x is bf16, expected f32");
    expect_error([&] { ops::scale(Tensor{}, 2.f); }, "scale: x has no data");
    expect_error([&] { ops::clamp(view(h, {64}), 1.f); }, "clamp: x is bf16, expected f32");
    expect_error([&] { ops::residual_forward(view(a, {64}), view(b, {64}), view(c, {8})); },
                 "residual_forward: b has shape [8], expected [64]");
    expect_error([&] { ops::to_bf16(view(a, {64}), view(b, {64})); },
                 "to_bf16: out is f32, expected bf16");
    expect_error(
        [&] {
            ops::round_bf16(view(a, {64}), view(b, {8, 8}));
        },
        "round_bf16: out has shape [64], expected [8, 8]");
    expect_error([&] { ops::from_bf16(view(a, {64}), view(b, {64})); },
                 "from_bf16: in is f32, expected bf16");
    expect_error(
        [&] {
            ops::to_bf16_rows(view(h, {8, 4}), view(a, {8, 8}), 5);
        },
        "to_bf16_rows: columns [5, 9) are outside in's 8 columns");
    expect_error(
        [&] {
            ops::from_bf16_rows(view(a, {8, 4}), view(h, {4, 16}), 0);
        },
        "from_bf16_rows: in has shape [4, 16], expected [8, 16]");
    expect_error([&] { ops::from_bf16_in_place(view(h, {64})); },
                 "from_bf16_in_place: buf is bf16, expected f32");
}

// --- Model and decode ops ------------------------------------------------------------------------

TEST(OpsDispatch, Dropout) {
    const int N = 9, C = 31;
    auto a = randn(N * C, 30), b = a;
    kernels::dropout(a.data(), N, C, 0.3f, 11, 2, 5);
    ops::dropout(view(b, {N, C}), {.rate = 0.3f, .seed = 11, .stream = 2, .row0 = 5});
    EXPECT_TRUE(bitwise_equal(a, b));
}

TEST(OpsDispatch, BiasBackward) {
    const int N = 21, O = 13;
    auto dy = randn(N * O, 31), a = accumulate_pattern(O), b = a;
    kernels::bias_backward(a.data(), dy.data(), N, O);
    ops::bias_backward(view(b, {O}), view(dy, {N, O}));
    EXPECT_TRUE(bitwise_equal(a, b));
}

TEST(OpsDispatch, QkNorm) {
    const int N = 11, H = 3, D = 16, W = 5 * D;
    auto a = randn(N * W, 32), b = a, xhat = randn(N * W, 33);
    std::vector<float> r1(N * H), r2(N * H);
    kernels::qk_norm_forward(a.data() + D, W, r1.data(), N, H, D, 1e-6f);
    const ops::QkNormHeads h{.col0 = D, .heads = H, .head_dim = D};
    ops::qk_norm_forward(view(b, {N, W}), view(r2, {N, H}), h, 1e-6f);
    EXPECT_TRUE(bitwise_equal(a, b) && bitwise_equal(r1, r2));
    kernels::qk_norm_backward(a.data() + D, W, xhat.data() + D, W, r1.data(), N, H, D);
    ops::qk_norm_backward(view(b, {N, W}), view(xhat, {N, W}), view(r2, {N, H}), h);
    EXPECT_TRUE(bitwise_equal(a, b));
}

TEST(OpsDispatch, AttentionDecodeAndPaged) {
    const int M = 3, S = 4, T = 20, Tmax = 24, H = 4, Hkv = 2, D = 8, W = 6 * D;
    auto q = randn(M * W, 35), k = randn(S * Hkv * Tmax * D, 36), v = randn(S * Hkv * Tmax * D, 37);
    std::vector<std::int32_t> seq = {2, 0, 3};
    std::vector<float> o1(M * H * D), o2(M * H * D);
    kernels::attention_decode(o1.data(), q.data(), W, k.data(), v.data(), seq.data(), M, T, Tmax, H,
                              Hkv, D, nullptr, 0.f);
    ops::attention_decode(view(o2, {M, H * D}), view(q, {M, W}), view(k, {S, Hkv, Tmax, D}),
                          view(v, {S, Hkv, Tmax, D}), view(seq, {M}), T, Tensor{},
                          {.H = H, .Hkv = Hkv});
    EXPECT_TRUE(bitwise_equal(o1, o2));
    // Paged: blocks of 6 positions in a scrambled order, the rows of different lengths.
    const int block = 6, nb = 16;
    auto kp = randn(nb * Hkv * block * D, 38), vp = randn(nb * Hkv * block * D, 39);
    std::vector<std::int32_t> tables = {3, 1, 4, 0, 5, 9, 2, 6, 8, 7, 11, 10}, lens = {4, 20, 13};
    std::vector<const std::int32_t*> rows = {&tables[0], &tables[4], &tables[8]};
    std::vector<float> slopes = {0.5f, 0.25f, 0.125f, 0.0625f};
    kernels::attention_paged(o1.data(), q.data(), W, kp.data(), vp.data(), rows.data(), lens.data(),
                             M, block, H, Hkv, D, slopes.data(), 0.2f);
    ops::attention_paged(view(o2, {M, H * D}), view(q, {M, W}), view(kp, {nb, Hkv, block, D}),
                         view(vp, {nb, Hkv, block, D}), view(tables, {M, 4}), view(lens, {M}),
                         view(slopes, {H}), {.H = H, .Hkv = Hkv, .scale = 0.2f});
    EXPECT_TRUE(bitwise_equal(o1, o2));
}

TEST(OpsDispatch, LinearDecode) {
    const int M = 3, I = 37, O = 11;
    auto x = randn(M * I, 40), W = randn(O * I, 41), b = randn(O, 42);
    std::vector<float> y1(M * O), y2(M * O);
    kernels::linear_decode(y1.data(), x.data(), W.data(), b.data(), M, I, O);
    ops::linear_decode(view(y2, {M, O}), view(x, {M, I}), view(W, {O, I}), view(b, {O}));
    EXPECT_TRUE(bitwise_equal(y1, y2));
    std::vector<std::uint16_t> w16(W.size());
    kernels::to_bf16(w16.data(), W.data(), W.size());
    kernels::linear_decode_bf16(y1.data(), x.data(), w16.data(), nullptr, M, I, O);
    ops::linear_decode(view(y2, {M, O}), view(x, {M, I}), view(w16, {O, I}), Tensor{});
    EXPECT_TRUE(bitwise_equal(y1, y2));
}

TEST(OpsDispatch, AttentionAct) {
    const int B = 2, T = 20, H = 4, Hkv = 2, D = 8, W = (H + 2 * Hkv) * D;
    auto qkv = randn(B * T * W, 43, 0.5f), dout = randn(B * T * H * D, 44);
    std::vector<float> slopes = {0.5f, 0.25f, 0.125f, 0.0625f};
    const kernels::AttnActParams act{kernels::AttnAct::norm_sqrelu, 1.f, 1e-5f};
    std::vector<float> o1(B * T * H * D), o2 = o1, d1(qkv.size()), d2(qkv.size());
    kernels::attention_act_forward(o1.data(), qkv.data(), B, T, H, Hkv, D, slopes.data(), act);
    ops::attention_act_forward(view(o2, {B, T, H * D}), view(qkv, {B, T, W}), view(slopes, {H}),
                               {.H = H, .Hkv = Hkv}, act);
    EXPECT_TRUE(bitwise_equal(o1, o2));
    kernels::attention_act_backward(d1.data(), dout.data(), qkv.data(), B, T, H, Hkv, D,
                                    slopes.data(), act);
    ops::attention_act_backward(view(d2, {B, T, W}), view(dout, {B, T, H * D}),
                                view(qkv, {B, T, W}), view(slopes, {H}), {.H = H, .Hkv = Hkv}, act);
    EXPECT_TRUE(bitwise_equal(d1, d2));
}

// One bad argument per op: the message names the op and the argument.
TEST(OpsDispatch, ModelOpsNameBadArguments) {
    std::vector<float> x(64);
    std::vector<std::int32_t> xi(64);
    std::vector<float> o(16);
    expect_error(
        [&] {
            ops::dropout(view(xi, {8, 8}), {.rate = 0.1f});
        },
        "dropout: x is i32, expected f32");
    expect_error(
        [&] {
            ops::dropout(view(x, {8, 8}), {.rate = 1.f});
        },
        "dropout: rate 1 outside [0, 1)");
    expect_error(
        [&] {
            ops::bias_backward(view(x, {4}), view(x, {8, 8}));
        },
        "bias_backward: db has shape [4], expected [8]");
    expect_error(
        [&] {
            ops::qk_norm_forward(view(x, {4, 16}), Tensor{}, {.heads = 3, .head_dim = 8}, 1e-6f);
        },
        "qk_norm_forward: heads 3 x 8 from column 0 do not fit x's rows of 16");
    expect_error(
        [&] {
            ops::qk_norm_backward(view(x, {8, 8}), view(x, {8, 8}), view(xi, {8, 2}),
                                  {.heads = 2, .head_dim = 4});
        },
        "qk_norm_backward: rstd is i32, expected f32");
    expect_error(
        [&] {
            ops::attention_decode(view(o, {2, 8}), view(x, {2, 8}), view(x, {1, 1, 8, 8}),
                                  view(x, {1, 1, 8, 8}), Tensor{}, 9, Tensor{}, {.H = 1, .Hkv = 1});
        },
        "attention_decode: T 9 outside 1..8");
    expect_error(
        [&] {
            ops::attention_paged(view(x, {2, 8}), view(x, {2, 8}), view(x, {1, 1, 8, 8}),
                                 view(x, {1, 1, 8, 8}), view(x, {2, 1}), view(xi, {2}), Tensor{},
                                 {.H = 1, .Hkv = 1});
        },
        "attention_paged: tables is f32, expected i32");
    expect_error(
        [&] {
            ops::linear_decode(view(o, {2, 8}), view(x, {2, 8}), view(x, {8, 4}), Tensor{});
        },
        "linear_decode: W has shape [8, 4], expected [8, 8]");
    expect_error(
        [&] {
            ops::attention_act_forward(view(o, {1, 2, 8}), view(x, {1, 2, 24}), Tensor{},
                                       {.H = 1, .Hkv = 1}, {});
        },
        "attention_act_forward: act is softmax");
    // The qkv check both attention ops share (ops/attention_check.h).
    expect_error(
        [&] {
            ops::attention_forward(view(o, {1, 2, 8}), view(o, {1, 2, 2}), view(x, {1, 2, 30}),
                                   Tensor{}, {.H = 2, .Hkv = 1});
        },
        "attention_forward: qkv rows of 30 are not (H + 2 Hkv) D = 4 D with 1 <= D <= 256");
    expect_error(
        [&] {
            ops::attention_forward(view(o, {1, 2, 8}), view(o, {1, 2, 2}), view(x, {1, 2, 24}),
                                   Tensor{}, {.H = 2, .Hkv = 1});
        },
        "attention_forward: out has shape [1, 2, 8], expected [1, 2, 12]");
    expect_error(
        [&] {
            ops::attention_act_backward(view(x, {1, 2, 28}), view(o, {1, 2, 8}),
                                        view(x, {1, 2, 28}), Tensor{}, {.H = 3, .Hkv = 2},
                                        {.act = kernels::AttnAct::sqrelu});
        },
        "attention_act_backward: H = 3 query heads need a positive multiple of Hkv = 2");
}

TEST(OpsDispatch, CudaRequestInCpuBuildNamesTheFlag) {
    if (kernels::cuda_built())
        GTEST_SKIP() << "a CUDA build: tests/cuda covers its device requests";
    EXPECT_EQ(kernels::cuda_device_count(), 0);
    const std::string flag = "this meshlm was built without CUDA (configure with -DMESHLM_CUDA=ON)";
    expect_error([] { kernels::DeviceBuffer b(Device::cuda, DType::f32, {4, 4}); }, flag);
    expect_error([] { kernels::set_cuda_device(0); }, flag);
    std::vector<float> a(16), c(16);
    Tensor av = view(a, {4, 4}), cv = view(c, {4, 4});
    av.device = cv.device = Device::cuda;
    expect_error([&] { ops::gemm(cv, av, false, av, false); },
                 "gemm: needs a CUDA device, but " + flag);
    expect_error([&] { ops::activation_forward(kernels::Act::relu, cv, av); }, flag);
    expect_error([&] { kernels::copy(cv, view(a, {4, 4})); }, flag);
    // The CPU side of the same buffer type works.
    kernels::DeviceBuffer host(Device::cpu, DType::f32, {4, 4});
    kernels::copy(host.view(), view(a, {16}));
    EXPECT_EQ(host.bytes(), 64u);
}

// What keeps a run on the CPU is named (Learner::device_gap, shown by train.device cuda and
// `meshlm info`): every optimizer, ZeRO stage and parallel layout trains there; the coordinate
// check does not.
TEST(OpsDispatch, TrainingDeviceGapsAreNamed) {
    const ModelConfig m = test::tiny_model();
    // Run on the GPU now: T5's distance bias, attention dropout, Transformer-VQ's attention.
    ModelConfig t5 = m;
    t5.position = "t5_bias", t5.dropout_attn = 0.1f;
    EXPECT_EQ(Learner::device_gap(t5, Device::cuda), "");
    ModelConfig vq = m;
    vq.attention = "vq";
    EXPECT_EQ(Learner::device_gap(vq, Device::cuda), "");  // trains
    // ... but its decoder steps a host Transformer: decoding names it.
    EXPECT_NE(decode_device_gap(vq, Device::cuda).find("Transformer-VQ"), std::string::npos);
    EXPECT_EQ(decode_device_gap(vq, Device::cpu), "");
    EXPECT_EQ(decode_device_gap(m, Device::cuda), "");
    const std::string coord = Learner::device_gap(m, Device::cuda, 10);
    EXPECT_NE(coord.find("training on cuda: train.coord_interval"), std::string::npos) << coord;
    EXPECT_EQ(Learner::device_gap(m, Device::cpu, 10), "");
}

}  // namespace
}  // namespace meshlm
