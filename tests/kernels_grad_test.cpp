// The CPU kernels (src/meshlm/kernels/cpu/) against finite differences and double-precision
// references: every backward, the attention and cross-entropy forwards, AdamW, sum_squares and
// scale, and determinism across runs and thread counts.
//
// Gradients. For an op with output `out`, the scalar objective is L = sum(out * R) for a fixed
// random R, so the upstream gradient handed to the backward is R itself. The analytic gradient
// is compared element by element with the central difference
//     numeric = (L(x + h) - L(x - h)) / ((x + h) - (x - h)),
// where L is summed in double over the float forward's output, and the step is measured on the
// stored floats (so rounding x +- h to float costs nothing). An element passes when
//     |analytic - numeric| <= tol.abs + tol.rel * |numeric|.
// The error of `numeric`, which sets each tolerance, has two parts:
//   - truncation, h^2/6 |d3L/dx3|. It is zero where the op is linear in the single input being
//     perturbed (embedding, linear, LayerNorm's w and b); those use a large step h = 0.5.
//   - rounding of the float forward. The kernels are deterministic, so only the k outputs that
//     depend on x differ between the two runs; each is off by a few 2^-24 relative, which puts
//     `numeric` off by about sqrt(k) * few * 2^-24 * |out R| / (2h).
//   Nonlinear ops use h = 1e-2, near the optimum (rounding / |L'''|)^(1/3) for O(1) inputs.
// The analytic side has its own float rounding (sums over rows), of the same order or smaller.
//
// Output conventions (kernels.h): a "+=" output is pre-filled with a known nonzero pattern and
// the gradient is taken as (result - pattern), so an op that overwrites fails; a "=" output is
// pre-filled with NaN, so any element the op leaves unwritten fails.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <numbers>
#include <ostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kernel_check.h"
#include "meshlm/core/threads.h"
#include "meshlm/kernels/kernels.h"
#include "meshlm/kernels/vocab_parallel.h"

namespace meshlm {
namespace {

namespace kn = kernels;

using namespace test;  // kernel_check.h: inputs, comparisons, finite differences

// ---------------------------------------------------------------------------------------------
// Embedding

TEST(KernelGrad, Embedding) {
    const int V = 13, T = 11, B = 3, C = 19, N = B * T;
    // Tokens from the first 9 ids only: repeats (rows of dwte summed over several positions)
    // and 4 rows never used, which must keep exactly their prefilled value.
    std::vector<int32_t> tokens(N);
    std::mt19937 rng(11);
    std::uniform_int_distribution<int> pick(0, 8);
    for (auto& t : tokens) t = pick(rng);
    auto wte = randn(V * C, 1), wpe = randn(T * C, 2), R = randn(N * C, 3);

    std::vector<float> out(N * C);
    auto objective = [&] {
        // The model's embedding: the token rows (here the whole vocabulary is one range), then
        // the position rows.
        kn::embedding_forward_vocab_range(out.data(), tokens.data(), wte.data(), 0, V, N, C);
        kn::position_embedding_forward(out.data(), wpe.data(), N, T, C);
        return dot(out, R);
    };
    auto dwte = accumulate_pattern(V * C), dwpe = accumulate_pattern(T * C);
    kn::embedding_backward_vocab_range(dwte.data(), R.data(), tokens.data(), 0, V, N, C);
    kn::position_embedding_backward(dwpe.data(), R.data(), N, T, C);

    // L is linear in each weight; each wte element reaches up to ~8 outputs of size ~2.
    const Tolerance tol{1e-5, 1e-5};
    check_gradient("embedding dwte", wte, added(dwte), objective, kLinearStep, tol);
    check_gradient("embedding dwpe", wpe, added(dwpe), objective, kLinearStep, tol);
    for (std::size_t i = 9 * C; i < dwte.size(); ++i)
        EXPECT_EQ(dwte[i], pattern_at(i)) << "unused row " << i / C << " of dwte changed";
}

// ---------------------------------------------------------------------------------------------
// LayerNorm

TEST(KernelGrad, LayerNorm) {
    const int N = 37, C = 45;
    const float eps = 1e-5f;
    // Rows with nonzero mean and std 1.5, weights around 1.
    auto x = randn(N * C, 21, 1.5f, 0.5f), w = randn(C, 22, 0.3f, 1.f), b = randn(C, 23, 0.3f);
    auto R = randn(N * C, 24);

    std::vector<float> out(N * C), mean(N), rstd(N);
    auto objective = [&] {
        kn::layernorm_forward(out.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N,
                              C, eps);
        return dot(out, R);
    };

    // Forward against double: out, mean and rstd. Values are O(5); a two-pass float mean and
    // variance over 45 elements is good to a few 2^-24 relative.
    objective();
    std::vector<double> out_ref(N * C), mean_ref(N), rstd_ref(N);
    for (int n = 0; n < N; ++n) {
        const float* xr = &x[n * C];
        double m = 0, var = 0;
        for (int c = 0; c < C; ++c) m += xr[c];
        m /= C;
        for (int c = 0; c < C; ++c) var += (xr[c] - m) * (xr[c] - m);
        const double r = 1 / std::sqrt(var / C + eps);
        for (int c = 0; c < C; ++c) out_ref[n * C + c] = (xr[c] - m) * r * w[c] + b[c];
        mean_ref[n] = m;
        rstd_ref[n] = r;
    }
    expect_close("layernorm out", out, out_ref, {2e-6, 2e-6});
    expect_close("layernorm mean", mean, mean_ref, {1e-6, 1e-6});
    expect_close("layernorm rstd", rstd, rstd_ref, {1e-6, 1e-6});

    objective();  // mean and rstd of the unperturbed x for the backward
    auto dx = accumulate_pattern(N * C), dw = accumulate_pattern(C), db = accumulate_pattern(C);
    kn::layernorm_backward(dx.data(), dw.data(), db.data(), R.data(), x.data(), w.data(),
                           mean.data(), rstd.data(), N, C);

    // x reaches the C = 45 outputs of its row, |out R| ~ 1: rounding ~ sqrt(45) * 3 * 2^-24 /
    // (2h) ~ 6e-5 typical, 3x that at the tail of 1665 samples (truncation is far smaller: the
    // error falls as h grows). w and b (linear) reach the N = 37 outputs of their column.
    check_gradient("layernorm dx", x, added(dx), objective, kStep, {5e-4, 1e-3});
    check_gradient("layernorm dw", w, added(dw), objective, kLinearStep, {2e-5, 1e-5});
    check_gradient("layernorm db", b, added(db), objective, kLinearStep, {2e-5, 1e-5});
}

// ---------------------------------------------------------------------------------------------
// Linear

TEST(KernelGrad, Linear) {
    const int N = 29, I = 37, O = 23;
    auto x = randn(N * I, 31), W = randn(O * I, 32, 1.f / std::sqrt(float(I)));
    auto bias = randn(O, 33), R = randn(N * O, 34);

    std::vector<float> y(N * O);
    auto objective = [&] {
        kn::linear_forward(y.data(), x.data(), W.data(), bias.data(), N, I, O);
        return dot(y, R);
    };
    auto dx = nan_filled(N * I);  // "=": overwritten
    auto dW = accumulate_pattern(O * I), dbias = accumulate_pattern(O);
    kn::linear_backward(dx.data(), dW.data(), dbias.data(), R.data(), x.data(), W.data(), N, I, O);

    // Linear in each input; an element reaches O = 23 (x) or N = 29 (W, bias) outputs of size
    // ~1, each a 37-term float dot product.
    const Tolerance tol{2e-5, 1e-5};
    check_gradient("linear dx", x, to_double(dx), objective, kLinearStep, tol);
    check_gradient("linear dW", W, added(dW), objective, kLinearStep, tol);
    check_gradient("linear dbias", bias, added(dbias), objective, kLinearStep, tol);
}

// The optional arguments: no bias is the same as a zero bias, and skipping dx / dbias leaves
// dW exactly what the full call computes.
TEST(KernelGrad, LinearOptionalArguments) {
    const int N = 9, I = 13, O = 11;
    auto x = randn(N * I, 35), W = randn(O * I, 36), dy = randn(N * O, 37);
    std::vector<float> zero_bias(O, 0.f), y_null(N * O), y_zero(N * O);
    kn::linear_forward(y_null.data(), x.data(), W.data(), nullptr, N, I, O);
    kn::linear_forward(y_zero.data(), x.data(), W.data(), zero_bias.data(), N, I, O);
    EXPECT_EQ(y_null, y_zero);

    auto dx = nan_filled(N * I);
    auto dW_full = accumulate_pattern(O * I), dW_only = accumulate_pattern(O * I);
    auto dbias = accumulate_pattern(O);
    kn::linear_backward(dx.data(), dW_full.data(), dbias.data(), dy.data(), x.data(), W.data(), N,
                        I, O);
    kn::linear_backward(nullptr, dW_only.data(), nullptr, dy.data(), x.data(), W.data(), N, I, O);
    EXPECT_EQ(dW_full, dW_only);
}

// ---------------------------------------------------------------------------------------------
// GELU

double gelu_reference(double x) {
    const double k = std::sqrt(2 / std::numbers::pi);
    return 0.5 * x * (1 + std::tanh(k * (x + 0.044715 * x * x * x)));
}

TEST(KernelGrad, Gelu) {
    // 125 full 8-wide vectors and a tail of 3; wide inputs plus hand-placed values at zero,
    // near zero and deep in both saturated ends.
    const std::size_t n = 1003;
    auto x = randn(n, 41, 2.5f);
    const float special[] = {0.f, 1e-3f, -1e-3f, 5.f, -5.f, 9.f, -9.f, 15.f, -15.f};
    std::copy(std::begin(special), std::end(special), x.begin());
    std::copy(std::begin(special), std::end(special), x.end() - 9);  // in the tail too
    auto R = randn(n, 42);

    std::vector<float> out(n);
    auto objective = [&] {
        kn::activation_forward(kn::Act::gelu_tanh, out.data(), x.data(), n);
        return dot(out, R);
    };

    // Forward against double: |out| <= 15, tanh through a ~2 ulp exp.
    objective();
    std::vector<double> ref(n);
    for (std::size_t i = 0; i < n; ++i) ref[i] = gelu_reference(x[i]);
    expect_close("gelu out", out, ref, {1e-6, 1e-6});

    auto dx = nan_filled(n);  // "=": overwritten
    kn::activation_backward(kn::Act::gelu_tanh, dx.data(), x.data(), R.data(), n);
    // One output per input: rounding ~ |out R| * 3 * 2^-24 / (2h) <= ~1.5e-4 for |x| = 15 and
    // |R| ~ 3; truncation h^2/6 |gelu'''| |R| <= ~5e-5.
    check_gradient("gelu dx", x, to_double(dx), objective, kStep, {2e-4, 1e-3});
}

// ---------------------------------------------------------------------------------------------
// Attention

struct AttentionShape {
    int T, C, H;
};

std::string to_string(const AttentionShape& s) {
    std::ostringstream os;
    os << "T" << s.T << "_C" << s.C << "_H" << s.H;
    return os.str();
}

// How gtest prints the parameter of a failing test.
void PrintTo(const AttentionShape& s, std::ostream* os) {
    *os << to_string(s);
}

// Naive causal softmax(Q K^T / sqrt(D)) V in double, O(T^2) per head: out[B,T,C], lse[B,H,T].
void attention_reference(std::vector<double>& out, std::vector<double>& lse,
                         const std::vector<float>& qkv, int B, int T, int C, int H) {
    const int D = C / H;
    const double s = 1 / std::sqrt(double(D));
    out.assign(std::size_t(B) * T * C, 0.0);
    lse.assign(std::size_t(B) * H * T, 0.0);
    std::vector<double> score(T);
    for (int b = 0; b < B; ++b)
        for (int h = 0; h < H; ++h)
            for (int i = 0; i < T; ++i) {
                auto row = [&](int t, int part) {
                    return &qkv[(b * T + t) * 3 * C + part * C + h * D];
                };
                const float* q = row(i, 0);
                double mx = -INFINITY;
                for (int j = 0; j <= i; ++j) {
                    const float* k = row(j, 1);
                    double dotqk = 0;
                    for (int d = 0; d < D; ++d) dotqk += double(q[d]) * k[d];
                    score[j] = s * dotqk;
                    mx = std::max(mx, score[j]);
                }
                double sum = 0;
                for (int j = 0; j <= i; ++j) sum += std::exp(score[j] - mx);
                const double l = mx + std::log(sum);
                lse[(b * H + h) * T + i] = l;
                double* o = &out[(b * T + i) * C + h * D];
                for (int j = 0; j <= i; ++j) {
                    const double p = std::exp(score[j] - l);
                    const float* v = row(j, 2);
                    for (int d = 0; d < D; ++d) o[d] += p * v[d];
                }
            }
}

// Elements of qkv to probe: q, k and v of both batches at the first rows, on both sides of the
// 64-row block edges and at the last row, two random channels each (spread over the heads).
std::vector<std::size_t> attention_probes(int B, int T, int C, unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> channel(0, C - 1);
    std::vector<std::size_t> idx;
    for (int t : {0, 1, 2, 62, 63, 64, 65, 66, 127, 128, 129, T - 1}) {
        if (t >= T) continue;  // (T - 1 may repeat a row: another pair of channels)
        for (int b = 0; b < B; ++b)
            for (int part = 0; part < 3; ++part)
                for (int r = 0; r < 2; ++r)
                    idx.push_back(std::size_t(b * T + t) * 3 * C + part * C + channel(rng));
    }
    return idx;
}

class AttentionGrad : public ::testing::TestWithParam<AttentionShape> {};

TEST_P(AttentionGrad, ForwardAndBackward) {
    const int B = 2, T = GetParam().T, C = GetParam().C, H = GetParam().H;
    auto qkv = randn(std::size_t(B) * T * 3 * C, 51 + T + C);
    auto R = randn(std::size_t(B) * T * C, 52 + T + C);

    std::vector<float> out(B * T * C), lse(B * H * T);
    auto objective = [&] {
        kn::attention_forward(out.data(), lse.data(), qkv.data(), B, T, H, H, C / H, nullptr);
        return dot(out, R);
    };

    // Forward against the naive reference. Outputs are weighted means of N(0,1) values; the
    // float path (scaled GEMM scores, ~2 ulp exp, online rescaling, up to 130-term sums) is
    // good to ~1e-6.
    objective();
    std::vector<double> out_ref, lse_ref;
    attention_reference(out_ref, lse_ref, qkv, B, T, C, H);
    expect_close("attention out", out, out_ref, {1e-5, 0});
    expect_close("attention lse", lse, lse_ref, {1e-5, 1e-6});

    auto dqkv = nan_filled(qkv.size());  // "=": overwritten
    kn::attention_backward(dqkv.data(), R.data(), out.data(), lse.data(), qkv.data(), B, T, H, H,
                           C / H, nullptr);
    // A key or value reaches up to T * D = 4160 outputs of size < 1; sqrt(4160) * few * 2^-24
    // / (2h) ~ 1e-4.
    check_gradient("attention dqkv", qkv, to_double(dqkv), objective, kStep, {5e-4, 1e-3},
                   attention_probes(B, T, C, 53));
}

INSTANTIATE_TEST_SUITE_P(Shapes, AttentionGrad,
                         ::testing::Values(AttentionShape{1, 48, 3}, AttentionShape{70, 48, 3},
                                           AttentionShape{130, 48, 3}, AttentionShape{1, 64, 2},
                                           AttentionShape{70, 64, 2}, AttentionShape{130, 64, 2}),
                         [](const auto& info) { return to_string(info.param); });

// ---------------------------------------------------------------------------------------------
// Softmax cross-entropy

TEST(KernelGrad, SoftmaxCrossEntropy) {
    // V not a multiple of 8 (vector body and scalar tail), rows padded to ldv; row 3 is
    // ignored, row 5 has logits around 100 (exp overflows unless the max is subtracted).
    const int N = 7, V = 37, ldv = 40;
    const std::vector<int32_t> targets = {0, 36, 5, -1, 17, 36, 9};
    const float kPad = 1234.5f, scale = 0.37f;
    auto logits = randn(std::size_t(N) * ldv, 61, 2.f);
    for (int n = 0; n < N; ++n)
        for (int v = 0; v < ldv; ++v) {
            if (v >= V) {
                logits[n * ldv + v] = kPad;
            } else if (n == 5) {
                logits[n * ldv + v] += 100.f;
            }
        }

    std::vector<float> losses(N);
    auto objective = [&] {
        kn::softmax_cross_entropy(logits.data(), losses.data(), targets.data(), N, V, ldv, 0.f);
        double l = 0;
        for (float x : losses) l += double(scale) * x;
        return l;
    };

    // Forward only (scale 0) leaves the logits alone; losses against double.
    const auto before = logits;
    objective();
    EXPECT_EQ(logits, before);
    std::vector<double> loss_ref(N, 0.0);
    for (int n = 0; n < N; ++n) {
        if (targets[n] < 0) continue;
        const float* x = &logits[n * ldv];
        const double mx = *std::max_element(x, x + V);
        double sum = 0;
        for (int v = 0; v < V; ++v) sum += std::exp(x[v] - mx);
        loss_ref[n] = mx + std::log(sum) - x[targets[n]];
    }
    // Losses are O(5) differences of O(100) logits in row 5: 100 * 2^-24 ~ 6e-6.
    expect_close("cross-entropy losses", losses, loss_ref, {2e-5, 1e-6});
    EXPECT_EQ(losses[3], 0.f);

    // The gradient is written over the logits; the padding must survive, the ignored row is 0.
    auto grad = logits;
    kn::softmax_cross_entropy(grad.data(), losses.data(), targets.data(), N, V, ldv, scale);
    std::vector<std::size_t> probes;
    for (int n = 0; n < N; ++n) {
        for (int v = V; v < ldv; ++v)
            EXPECT_EQ(grad[n * ldv + v], kPad) << "padding overwritten, row " << n;
        for (int v = 0; v < V; ++v) {
            probes.push_back(n * ldv + v);
            if (targets[n] < 0) {
                EXPECT_EQ(grad[n * ldv + v], 0.f) << "ignored row " << n;
            }
        }
    }
    // One loss per logit; rounding of the shifted logits ~ 100 * 2^-24 * 0.37 / (2h) ~ 1e-4
    // in row 5, ~1e-5 elsewhere.
    check_gradient("cross-entropy dlogits", logits, to_double(grad), objective, kStep, {5e-4, 1e-3},
                   probes);
}

// ---------------------------------------------------------------------------------------------
// AdamW, sum_squares, scale

// One AdamW step in double: the formula documented in kernels.h.
void adamw_reference(std::vector<double>& p, const std::vector<float>& g, std::vector<double>& m,
                     std::vector<double>& v, double lr, double b1, double b2, double eps, double wd,
                     long t) {
    for (std::size_t i = 0; i < p.size(); ++i) {
        p[i] -= lr * wd * p[i];
        m[i] = b1 * m[i] + (1 - b1) * g[i];
        v[i] = b2 * v[i] + (1 - b2) * double(g[i]) * g[i];
        p[i] -= lr / (1 - std::pow(b1, t)) * m[i] /
                (std::sqrt(v[i]) / std::sqrt(1 - std::pow(b2, t)) + eps);
    }
}

TEST(KernelGrad, AdamW) {
    const std::size_t n = 1003;  // not a multiple of the vector width
    const float lr = 1e-2f, beta1 = 0.9f, beta2 = 0.95f, eps = 1e-8f;
    for (float wd : {0.f, 0.1f}) {
        SCOPED_TRACE("weight_decay " + std::to_string(wd));
        auto p = randn(n, 71);
        std::vector<float> m(n, 0.f), v(n, 0.f);
        std::vector<double> p_ref = to_double(p), m_ref(n, 0.0), v_ref(n, 0.0);
        for (long step = 1; step <= 6; ++step) {
            auto g = randn(n, 72 + step, 0.1f);
            g[0] = 0.f;    // no gradient: only decay and momentum move p
            g[1] = 1e-8f;  // sqrt(v) comparable to eps
            g[2] = -3e-9f;
            kn::adamw(p.data(), g.data(), m.data(), v.data(), n, lr, beta1, beta2, eps, wd, step);
            adamw_reference(p_ref, g, m_ref, v_ref, lr, beta1, beta2, eps, wd, step);
        }
        // Each step moves p by ~lr = 1e-2. Per step p picks up ~3 roundings relative to |p|
        // (p * decay, the update, and the float decay factor 1 - lr * wd itself), so 6 steps
        // give ~18 * 2^-24 ~ 1.1e-6 relative; a wrong bias correction or decay (errors
        // ~1e-5..1e-3) cannot pass.
        expect_close("adamw p", p, p_ref, {1e-7, 2e-6});
        expect_close("adamw m", m, m_ref, {1e-8, 1e-6});
        expect_close("adamw v", v, v_ref, {1e-10, 1e-6});
    }
}

TEST(KernelGrad, SumSquares) {
    // Worst case of a block of up to 1024 float additions of nonnegative terms: 1024 * 2^-24
    // relative; blocks are added in double.
    const double rel = 1024.0 / (1 << 24);
    for (std::size_t n : {0, 1, 7, 1003, 100003}) {
        auto x = randn(n, 81);
        double ref = 0;
        for (float v : x) ref += double(v) * v;
        const double got = kn::sum_squares(x.data(), n);
        EXPECT_LE(std::fabs(got - ref), rel * ref) << "n = " << n;
        EXPECT_EQ(got, kn::sum_squares(x.data(), n)) << "not deterministic, n = " << n;
        report("sum_squares n=" + std::to_string(n), n, std::fabs(got - ref),
               ref > 0 ? std::fabs(got - ref) / (rel * ref) : 0);
    }
}

TEST(KernelGrad, Scale) {
    // A product of two floats is exact in double, so the correctly rounded float product is
    // float(double(x) * s): the kernel must match bit for bit.
    const std::size_t n = 1003;
    for (float s : {0.37f, -2.5f, 0.f}) {
        auto x = randn(n, 91);
        const auto x0 = x;
        kn::scale(x.data(), s, n);
        for (std::size_t i = 0; i < n; ++i)
            ASSERT_EQ(x[i], float(double(x0[i]) * s)) << "s = " << s << ", i = " << i;
    }
}

// ---------------------------------------------------------------------------------------------
// Determinism

TEST(KernelDeterminism, BackwardRepeatsBitwise) {
    {  // attention, three query blocks
        const int B = 2, T = 130, C = 48, H = 3;
        auto qkv = randn(std::size_t(B) * T * 3 * C, 101), dout = randn(B * T * C, 102);
        std::vector<float> out(B * T * C), lse(B * H * T);
        kn::attention_forward(out.data(), lse.data(), qkv.data(), B, T, H, H, C / H, nullptr);
        auto run = [&] {
            auto d = nan_filled(qkv.size());
            kn::attention_backward(d.data(), dout.data(), out.data(), lse.data(), qkv.data(), B, T,
                                   H, H, C / H, nullptr);
            return d;
        };
        EXPECT_TRUE(bitwise_equal(run(), run())) << "attention_backward";
    }
    {  // layernorm
        const int N = 37, C = 45;
        auto x = randn(N * C, 103), w = randn(C, 104), b = randn(C, 105), dout = randn(N * C, 106);
        std::vector<float> out(N * C), mean(N), rstd(N);
        kn::layernorm_forward(out.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N,
                              C, 1e-5f);
        auto run = [&] {
            auto dx = accumulate_pattern(N * C), dw = accumulate_pattern(C);
            auto db = accumulate_pattern(C);
            kn::layernorm_backward(dx.data(), dw.data(), db.data(), dout.data(), x.data(), w.data(),
                                   mean.data(), rstd.data(), N, C);
            dx.insert(dx.end(), dw.begin(), dw.end());
            dx.insert(dx.end(), db.begin(), db.end());
            return dx;
        };
        EXPECT_TRUE(bitwise_equal(run(), run())) << "layernorm_backward";
    }
    {  // embedding, with repeated tokens
        const int V = 13, T = 11, N = 33, C = 19;
        std::vector<int32_t> tokens(N);
        for (int n = 0; n < N; ++n) tokens[n] = (n * 5) % 7;
        auto dout = randn(N * C, 107);
        auto run = [&] {
            auto dwte = accumulate_pattern(V * C), dwpe = accumulate_pattern(T * C);
            kn::embedding_backward_vocab_range(dwte.data(), dout.data(), tokens.data(), 0, V, N, C);
            kn::position_embedding_backward(dwpe.data(), dout.data(), N, T, C);
            dwte.insert(dwte.end(), dwpe.begin(), dwpe.end());
            return dwte;
        };
        EXPECT_TRUE(bitwise_equal(run(), run())) << "embedding backward";
    }
}

// Forward outputs on 1 and on 2 threads agree to 1e-6 (the splits may differ, not the math).
TEST(KernelDeterminism, ForwardAcrossThreadCounts) {
    struct RestoreTwoThreads {
        ~RestoreTwoThreads() { set_thread_count(2); }
    } restore;
    const int B = 2, T = 130, C = 64, H = 2, N = B * T;
    auto qkv = randn(std::size_t(N) * 3 * C, 111), x = randn(N * C, 112);
    auto w = randn(C, 113), b = randn(C, 114);
    auto forwards = [&](int threads) {
        set_thread_count(threads);
        std::vector<float> att(N * C), lse(B * H * T), ln(N * C), mean(N), rstd(N), gelu(N * C);
        kn::attention_forward(att.data(), lse.data(), qkv.data(), B, T, H, H, C / H, nullptr);
        kn::layernorm_forward(ln.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N,
                              C, 1e-5f);
        kn::activation_forward(kn::Act::gelu_tanh, gelu.data(), x.data(), x.size());
        return std::vector<std::vector<float>>{att, lse, ln, gelu};
    };
    const auto one = forwards(1), two = forwards(2);
    const char* names[] = {"attention out", "attention lse", "layernorm out", "gelu out"};
    for (std::size_t k = 0; k < one.size(); ++k)
        for (std::size_t i = 0; i < one[k].size(); ++i)
            ASSERT_LE(std::fabs(one[k][i] - two[k][i]), 1e-6) << names[k] << "[" << i << "]";
}

}  // namespace
}  // namespace meshlm
