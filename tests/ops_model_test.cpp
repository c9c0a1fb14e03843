// The ops the model's last host loops became (vocabulary-parallel loss, KV-cache stores, position
// adds, element-wise steps, host-read sums, Transformer-VQ's codebook), on the CPU, each against
// the math written out here in double precision; and their named errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "kernel_check.h"
#include "meshlm/core/error.h"
#include "meshlm/kernels/ops/attention_decode.h"
#include "meshlm/kernels/ops/elementwise.h"
#include "meshlm/kernels/ops/embedding.h"
#include "meshlm/kernels/ops/stats.h"
#include "meshlm/kernels/ops/vocab_parallel.h"
#include "meshlm/kernels/ops/vq_attention.h"

namespace meshlm {
namespace {

using test::bitwise_equal;
using test::expect_close;
using test::expect_error;
using test::randn;

Tensor view(std::vector<float>& v, Shape s, Device d = Device::cpu) {
    return Tensor{v.data(), DType::f32, s, d};
}
Tensor view(std::vector<std::int32_t>& v, Shape s, Device d = Device::cpu) {
    return Tensor{v.data(), DType::i32, s, d};
}

float round_bf16_ref(float x) {  // round to nearest even on the fp32 bits
    std::uint32_t u;
    std::memcpy(&u, &x, 4);
    u = ((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16) << 16;
    std::memcpy(&x, &u, 4);
    return x;
}

// Three ranks' shards of V = 37 (13 padded rows each, the last holding 11): the phases with the
// all-reduces done here equal log-softmax and its gradient over the whole row, in double.
TEST(OpsModel, VocabParallelCrossEntropy) {
    const int N = 5, V = 37, ranks = 3, Vl = 13;
    const float scale = 0.5f, z_loss = 1e-2f;
    const std::vector<float> logits = randn(N * V, 3, 3.f);
    std::vector<std::int32_t> targets = {0, 36, -1, 13, 20};
    std::vector<std::vector<float>> x(ranks, std::vector<float>(N * Vl, 7.f));
    std::vector<std::vector<float>> mx(ranks, std::vector<float>(N)), st(ranks), loss(ranks);
    for (int r = 0; r < ranks; ++r)
        for (int n = 0; n < N; ++n)
            for (int v = 0; v < Vl && r * Vl + v < V; ++v)
                x[r][n * Vl + v] = logits[n * V + r * Vl + v];
    auto valid = [&](int r) { return std::min(Vl, V - r * Vl); };
    auto cols = [&](int r) { return view(x[r], {N, Vl}).columns(0, valid(r)); };
    std::vector<float> row_max(N, -INFINITY), stats(2 * N, 0.f);
    for (int r = 0; r < ranks; ++r) {
        ops::ce_row_max(view(mx[r], {N}), cols(r), view(targets, {N}));
        for (int n = 0; n < N; ++n) row_max[n] = std::max(row_max[n], mx[r][n]);
    }
    for (int r = 0; r < ranks; ++r) {
        st[r].assign(2 * N, 0.f);
        ops::ce_row_sums(view(st[r], {N, 2}), cols(r), view(targets, {N}), view(row_max, {N}),
                         r * Vl, true);
        for (int i = 0; i < 2 * N; ++i) stats[i] += st[r][i];
    }
    std::vector<double> want_loss(N), want_grad(N * V);
    for (int n = 0; n < N; ++n) {
        double m = -INFINITY, s = 0;
        for (int v = 0; v < V; ++v) m = std::max(m, double(logits[n * V + v]));
        for (int v = 0; v < V; ++v) s += std::exp(logits[n * V + v] - m);
        const double lse = m + std::log(s);
        const int t = targets[n];
        want_loss[n] = t < 0 ? 0 : lse - logits[n * V + t];
        for (int v = 0; v < V; ++v) {
            const double p = std::exp(logits[n * V + v] - lse);
            want_grad[n * V + v] = t < 0 ? 0 : scale * ((1 + 2 * z_loss * lse) * p - (v == t));
        }
    }
    std::vector<float> got_loss(N, 0.f), got_grad(N * V);
    for (int r = 0; r < ranks; ++r) {
        loss[r].assign(N, 0.f);
        ops::ce_finish(cols(r), view(loss[r], {N}), view(targets, {N}), view(row_max, {N}),
                       view(stats, {N, 2}), r * Vl, scale, z_loss);
        for (int n = 0; n < N; ++n) {
            if (r == 0) got_loss[n] = loss[r][n];
            EXPECT_EQ(loss[r][n], loss[0][n]) << "every rank computes the same loss";
            for (int v = 0; v < Vl; ++v) {
                if (r * Vl + v < V)
                    got_grad[n * V + r * Vl + v] = x[r][n * Vl + v];
                else
                    EXPECT_EQ(x[r][n * Vl + v], 0.f) << "padding column zeroed";
            }
        }
    }
    expect_close("vocab-parallel loss", got_loss, want_loss, {1e-5, 1e-5});
    expect_close("vocab-parallel dlogits", got_grad, want_grad, {1e-6, 1e-4});
    expect_error([&] { ops::ce_row_max(view(mx[0], {N - 1}), cols(0), view(targets, {N})); },
                 "ce_row_max: row_max has shape [4], expected [5]");
}

// Rows of qkv [M, (H + 2 Hkv) D] land at (table[pos / block], pos % block) of both pools; a
// dense cache is the pool with one block per sequence.
TEST(OpsModel, KvStore) {
    const int M = 3, H = 2, Hkv = 1, D = 4, W = (H + 2 * Hkv) * D, block = 2, blocks = 5;
    std::vector<float> qkv = randn(M * W, 5);
    std::vector<float> kp(blocks * Hkv * block * D, 0.f), vp = kp;
    std::vector<std::int32_t> tables = {4, 0, 0, 1, 3, 2}, pos = {1, 2, 3};  // [M, 2]
    ops::kv_store(view(kp, {blocks, Hkv, block, D}), view(vp, {blocks, Hkv, block, D}),
                  view(qkv, {M, W}), view(tables, {M, 2}), view(pos, {M}), H);
    std::vector<float> wk(kp.size(), 0.f), wv(vp.size(), 0.f);
    for (int m = 0; m < M; ++m) {
        const int blk = tables[m * 2 + pos[m] / block], off = pos[m] % block;
        for (int c = 0; c < D; ++c) {
            wk[(blk * block + off) * D + c] = qkv[m * W + H * D + c];
            wv[(blk * block + off) * D + c] = qkv[m * W + (H + Hkv) * D + c];
        }
    }
    EXPECT_TRUE(bitwise_equal(kp, wk));
    EXPECT_TRUE(bitwise_equal(vp, wv));
    pos[1] = 4;  // past the row's two blocks
    expect_error(
        [&] {
            ops::kv_store(view(kp, {blocks, Hkv, block, D}), view(vp, {blocks, Hkv, block, D}),
                          view(qkv, {M, W}), view(tables, {M, 2}), view(pos, {M}), H);
        },
        "kv_store: row 1's position 4 is past its table of 2 blocks of 2");
    expect_error(
        [&] {
            ops::kv_store(view(kp, {blocks, Hkv, block, D}), view(vp, {blocks, Hkv, block, D}),
                          view(qkv, {M, W}), view(tables, {M, 2}), view(pos, {M}), 3);
        },
        "do not fit qkv's rows of 16");
}

TEST(OpsModel, PositionAdds) {
    const int B = 2, T = 3, N = B * T, C = 5, P = 20;
    const std::vector<float> x0 = randn(N * C, 7);
    std::vector<float> wpe = randn(T * C, 8), table = randn(P * C, 9);
    std::vector<float> scale = {0.3337f}, x = x0;
    ops::position_embedding_forward(view(x, {N, C}), view(wpe, {T, C}), T, true);
    std::vector<float> want = x0;
    for (int n = 0; n < N; ++n)
        for (int c = 0; c < C; ++c) want[n * C + c] += round_bf16_ref(wpe[(n % T) * C + c]);
    EXPECT_TRUE(bitwise_equal(x, want)) << "learned positions rounded to bf16";

    std::vector<std::int32_t> pos0 = {4, 11};
    for (bool round : {false, true}) {
        x = x0;
        ops::sinusoid_position_forward(view(x, {N, C}), view(table, {P, C}), view(scale, {1}),
                                       view(pos0, {B}), T, round);
        const float s = round ? round_bf16_ref(scale[0]) : scale[0];
        want = x0;
        for (int n = 0; n < N; ++n)
            for (int c = 0; c < C; ++c) want[n * C + c] += s * table[(pos0[n / T] + n % T) * C + c];
        EXPECT_TRUE(bitwise_equal(x, want)) << "round " << round;
    }
    std::vector<float> dscale = {0.5f};
    ops::sinusoid_position_backward(view(dscale, {1}), view(x, {N, C}), view(table, {P, C}),
                                    view(pos0, {B}), T);
    double g = 0;
    for (int n = 0; n < N; ++n)
        for (int c = 0; c < C; ++c)
            g += double(x[n * C + c]) * table[(pos0[n / T] + n % T) * C + c];
    EXPECT_NEAR(dscale[0], 0.5 + g, 1e-6 * (1 + std::fabs(g)));
    expect_error(
        [&] {
            ops::sinusoid_position_forward(view(x, {N, C}), view(table, {P, C}), view(scale, {1}),
                                           view(pos0, {B}), 4, false);
        },
        "sinusoid_position_forward: T = 4 must divide the 6 rows");
}

TEST(OpsModel, ElementwiseAndSums) {
    const int N = 4, C = 3;
    std::vector<float> wide = randn(N * 2 * C, 11), b = randn(N * C, 12), out(N * C, 0.f);
    const Tensor w = view(wide, {N, 2 * C});
    ops::mul(view(out, {N, C}), w.columns(C, C), view(b, {N, C}));
    for (int n = 0; n < N; ++n)
        for (int c = 0; c < C; ++c)
            EXPECT_EQ(out[n * C + c], wide[n * 2 * C + C + c] * b[n * C + c]);
    ops::mul(w.columns(0, C), view(out, {N, C}), view(b, {N, C}));  // a strided output
    for (int n = 0; n < N; ++n)
        for (int c = 0; c < C; ++c) EXPECT_EQ(wide[n * 2 * C + c], out[n * C + c] * b[n * C + c]);

    std::vector<float> y = randn(7, 13), y0 = y, xs = randn(7, 14);
    ops::axpy(view(y, {7}), view(xs, {7}), -0.75f);
    for (int i = 0; i < 7; ++i) EXPECT_NEAR(y[i], y0[i] - 0.75 * xs[i], 1e-6);
    ops::fill(view(y, {7}), 2.5f);
    for (float v : y) EXPECT_EQ(v, 2.5f);

    double s = 0, a = 0;
    for (float v : b) s += v;
    for (int n = 0; n < N; ++n)
        for (int c = 0; c < C; ++c) a += std::fabs(wide[n * 2 * C + C + c]);
    EXPECT_DOUBLE_EQ(ops::sum(view(b, {N * C})), s);
    EXPECT_NEAR(ops::abs_sum(w.columns(C, C)), a, 1e-12 * a);
    expect_error(
        [&] {
            ops::mul(view(out, {N, C}), view(b, {N, C}), view(xs, {7}));
        },
        "mul: b has shape [7], expected [4, 3]");
}

// The coordinate check's score statistic over every (i, j) pair, with grouped keys.
TEST(OpsModel, AttentionScoreAbsSum) {
    const int B = 2, T = 5, H = 4, Hkv = 2, D = 3, W = (H + 2 * Hkv) * D;
    const float scale = 0.6f;
    std::vector<float> qkv = randn(B * T * W, 15);
    double want = 0;
    for (int b = 0; b < B; ++b)
        for (int h = 0; h < H; ++h)
            for (int i = 0; i < T; ++i)
                for (int j = 0; j < T; ++j) {
                    double d = 0;
                    for (int c = 0; c < D; ++c)
                        d += double(qkv[(b * T + i) * W + h * D + c]) *
                             qkv[(b * T + j) * W + (H + h / (H / Hkv)) * D + c];
                    want += std::fabs(scale * d);
                }
    EXPECT_NEAR(ops::attention_score_abs_sum(view(qkv, {B * T, W}), B, T, H, Hkv, D, scale), want,
                1e-5 * want);
}

// The codebook from its sums, the nearest code (brute force in double), the commitment
// gradient and this batch's statistics.
TEST(OpsModel, VqCodebook) {
    const int S = 6, dk = 4, N = 9;
    std::vector<float> c_sum = randn(S * dk, 16), c_count = {3.f, 0.f, 1.f, 0.005f, 7.f, 2.f};
    std::vector<float> codebook(S * dk);
    ops::vq_codebook(view(codebook, {S, dk}), view(c_sum, {S, dk}), view(c_count, {S}));
    for (int s = 0; s < S; ++s)
        for (int j = 0; j < dk; ++j)
            EXPECT_FLOAT_EQ(codebook[s * dk + j], c_sum[s * dk + j] / std::max(c_count[s], 0.01f));

    std::vector<float> qk = randn(N * 2 * dk, 17);  // the keys are the second half
    const Tensor keys = view(qk, {N, 2 * dk}).columns(dk, dk);
    std::vector<std::int32_t> z(N);
    std::vector<float> err(N);
    ops::vq_quantize(view(z, {N}), view(err, {N}), keys, view(codebook, {S, dk}));
    for (int n = 0; n < N; ++n) {
        int best = 0;
        double bd = std::numeric_limits<double>::infinity();
        for (int s = 0; s < S; ++s) {
            double d = 0;
            for (int j = 0; j < dk; ++j)
                d += std::pow(double(qk[n * 2 * dk + dk + j]) - codebook[s * dk + j], 2);
            if (d < bd) bd = d, best = s;
        }
        EXPECT_EQ(z[n], best) << "row " << n;
        EXPECT_NEAR(err[n], bd, 1e-5 * (1 + bd));
    }

    std::vector<float> dqk = randn(N * 2 * dk, 18), dqk0 = dqk;
    ops::vq_commit_grad(view(dqk, {N, 2 * dk}).columns(dk, dk), keys, view(codebook, {S, dk}),
                        view(z, {N}), 0.25f);
    for (int n = 0; n < N; ++n)
        for (int j = 0; j < 2 * dk; ++j) {
            const double add =
                j < dk ? 0.0 : 0.25 * (double(qk[n * 2 * dk + j]) - codebook[z[n] * dk + j - dk]);
            EXPECT_NEAR(dqk[n * 2 * dk + j], dqk0[n * 2 * dk + j] + add, 1e-6) << n << "," << j;
        }

    std::vector<float> sums(S * dk, 1.f), counts(S, 0.5f);
    ops::vq_codebook_stats(view(sums, {S, dk}), view(counts, {S}), keys, view(z, {N}));
    for (int s = 0; s < S; ++s) {
        double c = 0.5;
        std::vector<double> want(dk, 1.0);
        for (int n = 0; n < N; ++n)
            if (z[n] == s) {
                c += 1;
                for (int j = 0; j < dk; ++j) want[j] += qk[n * 2 * dk + dk + j];
            }
        EXPECT_EQ(counts[s], c);
        for (int j = 0; j < dk; ++j) EXPECT_NEAR(sums[s * dk + j], want[j], 1e-5);
    }
    z[2] = S;
    expect_error(
        [&] {
            ops::vq_codebook_stats(view(sums, {S, dk}), view(counts, {S}), keys, view(z, {N}));
        },
        "vq_codebook_stats: code 6 outside [0, 6)");
}

// The VQ attention on CUDA views needs a CUDA device: without one (or in a CPU build, by the
// build flag) the op names itself; views on two devices are named too.
TEST(OpsModel, VqAttentionOnCudaNeedsTheDevice) {
    const int B = 1, T = 4, N = B * T, S = 3, dk = 2, dv = 2, L = 2;
    std::vector<float> o(N * dv), lse(N), q(N * dk), v(N * dv), cb(S * dk), rel((L + 1) * dk),
        u(dk), vb(dk);
    std::vector<std::int32_t> z(N, 0);
    const ops::VqTables t{view(cb, {S, dk}, Device::cuda), view(rel, {L + 1, dk}, Device::cuda),
                          view(u, {dk}, Device::cuda), view(vb, {dk}, Device::cuda)};
    const kernels::VqAttnShape shape{L, S, dk, dv};
    expect_error(
        [&] {
            ops::vq_attention_forward(view(o, {N, dv}, Device::cuda), view(lse, {N}, Device::cuda),
                                      view(q, {N, dk}, Device::cuda), view(z, {N}, Device::cuda),
                                      view(v, {N, dv}, Device::cuda), t, B, T, shape, nullptr);
        },
        "vq_attention_forward");
    expect_error(
        [&] {
            ops::vq_attention_forward(view(o, {N, dv}), view(lse, {N}), view(q, {N, dk}),
                                      view(z, {N}), view(v, {N, dv}), t, B, T, shape, nullptr);
        },
        "vq_attention_forward: codebook is on cuda but q is on cpu");
}

}  // namespace
}  // namespace meshlm
