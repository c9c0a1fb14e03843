// The composable-transformer kernels (kernels.h): RMSNorm, LayerNorm without bias, the
// activations and GLUs, attention with grouped key/value heads, ALiBi and dropout, its decoding
// form, RoPE, dropout, and cross-entropy with z-loss (whole-vocabulary and vocabulary-parallel).
//
// Gradients follow kernels_grad_test.cpp: for an op with output `out` the objective is
// L = sum(out * R) for a fixed random R, so R is the upstream gradient; the analytic gradient is
// compared with the double-precision central difference (L(x + h) - L(x - h)) / (2h) of the float
// forward, element by element, |analytic - numeric| <= tol.abs + tol.rel * |numeric|. Steps and
// tolerances are those of kernels_grad_test.cpp with the same error budget: h = 0.5 where L is
// linear in the perturbed input (no truncation error), h = 1e-2 otherwise; rounding of the float
// forward puts `numeric` off by ~sqrt(k) * few * 2^-24 * |out R| / (2h) for k affected outputs.
//
// References are written independently of the kernels: the dropout masks are drawn with the
// Philox class of core/rng.h, one uniform() per element, in the stream order kernels.h defines.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <numbers>
#include <ostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kernel_check.h"
#include "meshlm/core/rng.h"
#include "meshlm/core/threads.h"
#include "meshlm/kernels/kernels.h"
#include "meshlm/kernels/vocab_parallel.h"

namespace meshlm {
namespace {

namespace kn = kernels;

using namespace test;  // kernel_check.h: inputs, comparisons, finite differences

// Uniform draw X of the stream Philox(seed, stream), counted from counter 0: the reference for
// every dropout mask.
float philox_uniform(std::uint64_t seed, std::uint64_t stream, std::uint64_t X) {
    Philox p(seed, stream);
    p.set_counter(X / 4);
    for (std::uint64_t k = 0; k < X % 4; ++k) p.next_u32();
    return p.uniform();
}

// ---------------------------------------------------------------------------------------------
// RMSNorm and LayerNorm without bias

TEST(TransformerKernels, RmsNorm) {
    const int N = 37, C = 45;
    const float eps = 1e-5f;
    auto x = randn(N * C, 201, 1.5f, 0.5f), w = randn(C, 202, 0.3f, 1.f), b = randn(C, 203, 0.3f);
    auto R = randn(N * C, 204);
    for (bool with_bias : {true, false}) {
        SCOPED_TRACE(with_bias ? "with bias" : "without bias");
        const std::string tag = with_bias ? "rmsnorm " : "rmsnorm (no bias) ";
        const float* bp = with_bias ? b.data() : nullptr;
        std::vector<float> out(N * C), rstd(N);
        auto objective = [&] {
            kn::rmsnorm_forward(out.data(), rstd.data(), x.data(), w.data(), bp, N, C, eps);
            return dot(out, R);
        };
        objective();
        std::vector<double> out_ref(N * C), rstd_ref(N);
        for (int n = 0; n < N; ++n) {
            double ss = 0;
            for (int c = 0; c < C; ++c) ss += double(x[n * C + c]) * x[n * C + c];
            const double r = 1 / std::sqrt(ss / C + eps);
            for (int c = 0; c < C; ++c)
                out_ref[n * C + c] = x[n * C + c] * r * w[c] + (with_bias ? b[c] : 0.0);
            rstd_ref[n] = r;
        }
        // A float sum of 45 squares and a handful of roundings per output.
        expect_close(tag + "out", out, out_ref, {2e-6, 2e-6});
        expect_close(tag + "rstd", rstd, rstd_ref, {1e-6, 1e-6});

        objective();
        auto dx = accumulate_pattern(N * C), dw = accumulate_pattern(C), db = accumulate_pattern(C);
        kn::rmsnorm_backward(dx.data(), dw.data(), with_bias ? db.data() : nullptr, R.data(),
                             x.data(), w.data(), rstd.data(), N, C);
        // LayerNorm's budgets: x reaches 45 outputs of its row, w and b (linear) 37 of a column.
        check_gradient(tag + "dx", x, added(dx), objective, kStep, {5e-4, 1e-3});
        check_gradient(tag + "dw", w, added(dw), objective, kLinearStep, {2e-5, 1e-5});
        if (with_bias) {
            check_gradient(tag + "db", b, added(db), objective, kLinearStep, {2e-5, 1e-5});
        } else {
            EXPECT_EQ(db, accumulate_pattern(C));
        }
    }
}

TEST(TransformerKernels, LayerNormWithoutBias) {
    const int N = 37, C = 45;
    const float eps = 1e-5f;
    auto x = randn(N * C, 211, 1.5f, 0.5f), w = randn(C, 212, 0.3f, 1.f), R = randn(N * C, 213);
    std::vector<float> out(N * C), mean(N), rstd(N);
    auto objective = [&] {
        kn::layernorm_forward(out.data(), mean.data(), rstd.data(), x.data(), w.data(), nullptr, N,
                              C, eps);
        return dot(out, R);
    };
    // A null bias is a zero bias.
    objective();
    const std::vector<float> zero(C, 0.f);
    std::vector<float> out_zero(N * C), mean_zero(N), rstd_zero(N);
    kn::layernorm_forward(out_zero.data(), mean_zero.data(), rstd_zero.data(), x.data(), w.data(),
                          zero.data(), N, C, eps);
    EXPECT_EQ(out, out_zero);

    auto dx = accumulate_pattern(N * C), dw = accumulate_pattern(C);
    kn::layernorm_backward(dx.data(), dw.data(), nullptr, R.data(), x.data(), w.data(), mean.data(),
                           rstd.data(), N, C);
    check_gradient("layernorm (no bias) dx", x, added(dx), objective, kStep, {5e-4, 1e-3});
    check_gradient("layernorm (no bias) dw", w, added(dw), objective, kLinearStep, {2e-5, 1e-5});
}

// ---------------------------------------------------------------------------------------------
// Activations and GLUs

double act_reference(kn::Act act, double x) {
    switch (act) {
        case kn::Act::gelu_tanh: {
            const double k = std::sqrt(2 / std::numbers::pi);
            return 0.5 * x * (1 + std::tanh(k * (x + 0.044715 * x * x * x)));
        }
        case kn::Act::gelu:
            return 0.5 * x * std::erfc(-x / std::numbers::sqrt2);
        case kn::Act::relu:
            return x > 0 ? x : 0;
        case kn::Act::sqrelu:
            return x > 0 ? x * x : 0;
        case kn::Act::silu:
            return x / (1 + std::exp(-x));
    }
    return NAN;
}

const char* act_name(kn::Act act) {
    switch (act) {
        case kn::Act::gelu_tanh:
            return "gelu_tanh";
        case kn::Act::gelu:
            return "gelu";
        case kn::Act::relu:
            return "relu";
        case kn::Act::sqrelu:
            return "sqrelu";
        case kn::Act::silu:
            return "silu";
    }
    return "?";
}

constexpr kn::Act kActs[] = {kn::Act::gelu_tanh, kn::Act::gelu, kn::Act::relu, kn::Act::sqrelu,
                             kn::Act::silu};

// relu and sqrelu have a kink (relu) or a jump in curvature (sqrelu) at 0: the central
// difference is only exact for points farther than the step from it.
bool smooth_at(kn::Act act, float x) {
    return !(act == kn::Act::relu || act == kn::Act::sqrelu) || std::fabs(x) > 2 * kStep;
}

TEST(TransformerKernels, Activations) {
    // 125 full 8-wide vectors and a tail of 3; special values at zero, near it, and saturated.
    const std::size_t n = 1003;
    const float special[] = {0.f, 1e-3f, -1e-3f, 5.f, -5.f, 9.f, -9.f, 15.f, -15.f};
    for (kn::Act act : kActs) {
        const std::string name = act_name(act);
        SCOPED_TRACE(name);
        auto x = randn(n, 221, 2.5f);
        std::copy(std::begin(special), std::end(special), x.begin());
        std::copy(std::begin(special), std::end(special), x.end() - 9);
        auto R = randn(n, 222);
        std::vector<float> out(n);
        auto objective = [&] {
            kn::activation_forward(act, out.data(), x.data(), n);
            return dot(out, R);
        };
        objective();
        std::vector<double> ref(n);
        for (std::size_t i = 0; i < n; ++i) ref[i] = act_reference(act, x[i]);
        // |out| <= 225 (sqrelu(15)); a few roundings through the ~2 ulp exp, and erfc's 1.2e-7
        // relative error.
        expect_close(name + " out", out, ref, {1e-6, 1e-6});

        auto dx = nan_filled(n);
        kn::activation_backward(act, dx.data(), x.data(), R.data(), n);
        std::vector<std::size_t> probes;
        for (std::size_t i = 0; i < n; ++i)
            if (smooth_at(act, x[i])) probes.push_back(i);
        for (std::size_t i = 0; i < n; ++i) {
            if (!smooth_at(act, x[i])) {  // excluded from the check, but must be a number
                EXPECT_TRUE(std::isfinite(dx[i])) << name << " dx[" << i << "]";
            }
        }
        // As gelu in kernels_grad_test.cpp: rounding ~ |out R| 3 * 2^-24 / (2h), up to ~1.5e-4
        // for |x| = 15 (~2e-3 relative for sqrelu's |out| = 225, where numeric is ~90).
        check_gradient(name + " dx", x, to_double(dx), objective, kStep, {2e-4, 1e-3}, probes);
    }
}

TEST(TransformerKernels, GatedLinearUnits) {
    // F = 37: four full vectors and a tail of 5 per half-row.
    const int N = 13, F = 37;
    for (kn::Act act : kActs) {
        const std::string name = std::string("glu ") + act_name(act);
        SCOPED_TRACE(name);
        auto h = randn(std::size_t(N) * 2 * F, 231, 1.5f);
        auto R = randn(std::size_t(N) * F, 232);
        std::vector<float> out(std::size_t(N) * F);
        auto objective = [&] {
            kn::glu_forward(act, out.data(), h.data(), N, F);
            return dot(out, R);
        };
        objective();
        std::vector<double> ref(out.size());
        for (int r = 0; r < N; ++r)
            for (int f = 0; f < F; ++f)
                ref[r * F + f] = act_reference(act, h[r * 2 * F + f]) * h[r * 2 * F + F + f];
        expect_close(name + " out", out, ref, {1e-6, 1e-6});

        auto dh = nan_filled(h.size());
        kn::glu_backward(act, dh.data(), h.data(), R.data(), N, F);
        std::vector<std::size_t> probes;
        for (int r = 0; r < N; ++r)
            for (int f = 0; f < 2 * F; ++f)
                if (f >= F || smooth_at(act, h[r * 2 * F + f])) probes.push_back(r * 2 * F + f);
        // One output per gate / up element, |out R| mostly < 10: rounding <~ 1e-4.
        check_gradient(name + " dh", h, to_double(dh), objective, kStep, {2e-4, 1e-3}, probes);
    }
}

// ---------------------------------------------------------------------------------------------
// Attention: grouped key/value heads, ALiBi, dropout

struct AttnCase {
    int T, H, Hkv, D;
    bool alibi, dropout;
};

std::string to_string(const AttnCase& c) {
    std::ostringstream os;
    os << "T" << c.T << "_H" << c.H << "_Hkv" << c.Hkv << "_D" << c.D << (c.alibi ? "_alibi" : "")
       << (c.dropout ? "_dropout" : "");
    return os.str();
}

void PrintTo(const AttnCase& c, std::ostream* os) {
    *os << to_string(c);
}

// ALiBi's slopes for H heads (2^(-8 h / H), h = 1..H).
std::vector<float> alibi_slopes(int H) {
    std::vector<float> s(H);
    for (int h = 0; h < H; ++h) s[h] = std::exp2(-8.f * (h + 1) / H);
    return s;
}

// The call's dropout: a 20% rate, and a global row / head offset so the counter's every term is
// exercised (this call is rows 3.. and heads 2.. of a model with 2 + H + 1 heads).
kn::AttnDropout test_dropout(int H) {
    kn::AttnDropout d;
    d.rate = 0.2f;
    d.seed = 0x1234abcd5678ull;
    d.stream = 77;
    d.row0 = 3;
    d.head0 = 2;
    d.n_head = H + 3;
    return d;
}

// Naive causal attention in double, O(T^2) per head, straight from kernels.h: out[B, T, H D],
// lse[B, H, T] (of the undropped scores), dropout scales drawn one by one from Philox.
void attention_reference(std::vector<double>& out, std::vector<double>& lse,
                         const std::vector<float>& qkv, int B, int T, int H, int Hkv, int D,
                         const float* slopes, const kn::AttnDropout* drop) {
    const int ld = (H + 2 * Hkv) * D, G = H / Hkv;
    const double s = 1 / std::sqrt(double(D));
    out.assign(std::size_t(B) * T * H * D, 0.0);
    lse.assign(std::size_t(B) * H * T, 0.0);
    std::vector<double> score(T);
    for (int b = 0; b < B; ++b)
        for (int h = 0; h < H; ++h) {
            const int g = h / G;
            for (int i = 0; i < T; ++i) {
                const float* q = &qkv[std::size_t(b * T + i) * ld + h * D];
                double mx = -INFINITY;
                for (int j = 0; j <= i; ++j) {
                    const float* k = &qkv[std::size_t(b * T + j) * ld + (H + g) * D];
                    double d = 0;
                    for (int c = 0; c < D; ++c) d += double(q[c]) * k[c];
                    score[j] = s * d - (slopes ? double(slopes[h]) * (i - j) : 0.0);
                    mx = std::max(mx, score[j]);
                }
                double sum = 0;
                for (int j = 0; j <= i; ++j) sum += std::exp(score[j] - mx);
                const double l = mx + std::log(sum);
                lse[(std::size_t(b) * H + h) * T + i] = l;
                double* o = &out[std::size_t(b * T + i) * H * D + h * D];
                for (int j = 0; j <= i; ++j) {
                    double p = std::exp(score[j] - l);
                    if (drop) {
                        const std::uint64_t X =
                            ((std::uint64_t(drop->row0 + b) * drop->n_head + drop->head0 + h) * T +
                             i) *
                                T +
                            j;
                        p *= philox_uniform(drop->seed, drop->stream, X) >= drop->rate
                                 ? 1 / (1 - double(drop->rate))
                                 : 0.0;
                    }
                    const float* v = &qkv[std::size_t(b * T + j) * ld + (H + Hkv + g) * D];
                    for (int c = 0; c < D; ++c) o[c] += p * v[c];
                }
            }
        }
}

// Elements of qkv to probe: rows at the start, on both sides of the 64-row block edges and at
// the end, in both batches; two random columns each of the query, key and value heads.
std::vector<std::size_t> attention_probes(int B, int T, int H, int Hkv, int D, unsigned seed) {
    const int ld = (H + 2 * Hkv) * D;
    std::mt19937 rng(seed);
    const int lo[3] = {0, H * D, (H + Hkv) * D}, hi[3] = {H * D, (H + Hkv) * D, ld};
    std::vector<std::size_t> idx;
    for (int t : {0, 1, 2, 62, 63, 64, 65, 66, 127, 128, 129, T - 1}) {
        if (t >= T) continue;
        for (int b = 0; b < B; ++b)
            for (int part = 0; part < 3; ++part) {
                std::uniform_int_distribution<int> col(lo[part], hi[part] - 1);
                for (int r = 0; r < 2; ++r) idx.push_back(std::size_t(b * T + t) * ld + col(rng));
            }
    }
    return idx;
}

class TransformerAttention : public ::testing::TestWithParam<AttnCase> {};

TEST_P(TransformerAttention, ForwardAndBackward) {
    const AttnCase p = GetParam();
    const int B = 2, T = p.T, H = p.H, Hkv = p.Hkv, D = p.D, ld = (H + 2 * Hkv) * D;
    const unsigned seed = 241 + T + 7 * H + 3 * Hkv + (p.alibi ? 1 : 0) + (p.dropout ? 2 : 0);
    auto qkv = randn(std::size_t(B) * T * ld, seed);
    auto R = randn(std::size_t(B) * T * H * D, seed + 1000);
    const auto slopes = alibi_slopes(H);
    const float* sl = p.alibi ? slopes.data() : nullptr;
    const kn::AttnDropout drop = test_dropout(H);
    const kn::AttnDropout* dp = p.dropout ? &drop : nullptr;

    std::vector<float> out(std::size_t(B) * T * H * D), lse(std::size_t(B) * H * T);
    auto objective = [&] {
        kn::attention_forward(out.data(), lse.data(), qkv.data(), B, T, H, Hkv, D, sl, dp);
        return dot(out, R);
    };
    objective();
    std::vector<double> out_ref, lse_ref;
    attention_reference(out_ref, lse_ref, qkv, B, T, H, Hkv, D, sl, dp);
    // As kernels_grad_test.cpp's attention: weighted means of N(0,1) values, good to ~1e-6
    // (dropout scales some terms by 1.25; ALiBi only shifts scores).
    expect_close("attention out", out, out_ref, {1e-5, 0});
    expect_close("attention lse", lse, lse_ref, {1e-5, 1e-6});

    auto dqkv = nan_filled(qkv.size());
    kn::attention_backward(dqkv.data(), R.data(), out.data(), lse.data(), qkv.data(), B, T, H, Hkv,
                           D, sl, dp);
    // A key or value now reaches up to G * T * D outputs (G = H / Hkv <= 4 query heads share
    // it): sqrt(4 * 130 * 16) * few * 2^-24 / (2h) ~ 5e-5, under kernels_grad_test's budget.
    check_gradient("attention dqkv", qkv, to_double(dqkv), objective, kStep, {5e-4, 1e-3},
                   attention_probes(B, T, H, Hkv, D, seed + 2000));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, TransformerAttention,
    ::testing::Values(AttnCase{1, 4, 2, 16, false, false}, AttnCase{70, 4, 2, 16, false, false},
                      AttnCase{130, 4, 2, 16, false, false}, AttnCase{70, 4, 1, 16, false, false},
                      AttnCase{130, 4, 1, 16, false, false}, AttnCase{70, 4, 4, 16, true, false},
                      AttnCase{130, 4, 2, 16, true, false}, AttnCase{70, 4, 4, 16, false, true},
                      AttnCase{130, 4, 2, 16, false, true}, AttnCase{130, 4, 1, 24, true, true}),
    [](const auto& info) { return to_string(info.param); });

// The group's key/value gradients are summed in a fixed order: repeats agree bitwise.
TEST(TransformerAttention, BackwardRepeatsBitwise) {
    const int B = 2, T = 130, H = 4, Hkv = 2, D = 16, ld = (H + 2 * Hkv) * D;
    auto qkv = randn(std::size_t(B) * T * ld, 251), dout = randn(std::size_t(B) * T * H * D, 252);
    const auto slopes = alibi_slopes(H);
    const kn::AttnDropout drop = test_dropout(H);
    std::vector<float> out(std::size_t(B) * T * H * D), lse(std::size_t(B) * H * T);
    kn::attention_forward(out.data(), lse.data(), qkv.data(), B, T, H, Hkv, D, slopes.data(),
                          &drop);
    auto run = [&] {
        auto d = nan_filled(qkv.size());
        kn::attention_backward(d.data(), dout.data(), out.data(), lse.data(), qkv.data(), B, T, H,
                               Hkv, D, slopes.data(), &drop);
        return d;
    };
    EXPECT_TRUE(bitwise_equal(run(), run()));
}

// The backward's gradients in double, straight from the formulas at the top of
// cpu/attention.cpp (no dropout): P from the reference's lse, Dvec = rowsum(P * dP),
// dS = P * (dP - Dvec); dQ = s dS K, dK = s dS^T Q and dV = P^T dO summed over the group.
std::vector<double> attention_backward_reference(const std::vector<float>& qkv,
                                                 const std::vector<float>& dout,
                                                 const std::vector<double>& lse, int B, int T,
                                                 int H, int Hkv, int D, const float* slopes) {
    const int ld = (H + 2 * Hkv) * D, G = H / Hkv;
    const double s = 1 / std::sqrt(double(D));
    std::vector<double> dqkv(qkv.size(), 0.0), p(T), dp(T);
    auto at = [&](int b, int t, int col) { return std::size_t(b * T + t) * ld + col; };
    for (int b = 0; b < B; ++b)
        for (int h = 0; h < H; ++h) {
            const int q0 = h * D, k0 = (H + h / G) * D, v0 = (H + Hkv + h / G) * D;
            for (int i = 0; i < T; ++i) {
                const float* dO = &dout[std::size_t(b * T + i) * H * D + h * D];
                double dvec = 0;
                for (int j = 0; j <= i; ++j) {
                    double qk = 0, dov = 0;
                    for (int c = 0; c < D; ++c) {
                        qk += double(qkv[at(b, i, q0 + c)]) * qkv[at(b, j, k0 + c)];
                        dov += double(dO[c]) * qkv[at(b, j, v0 + c)];
                    }
                    const double bias = slopes ? double(slopes[h]) * (i - j) : 0.0;
                    p[j] = std::exp(s * qk - bias - lse[(std::size_t(b) * H + h) * T + i]);
                    dp[j] = dov;
                    dvec += p[j] * dov;
                }
                for (int j = 0; j <= i; ++j) {
                    const double ds = p[j] * (dp[j] - dvec);
                    for (int c = 0; c < D; ++c) {
                        dqkv[at(b, i, q0 + c)] += s * ds * qkv[at(b, j, k0 + c)];
                        dqkv[at(b, j, k0 + c)] += s * ds * qkv[at(b, i, q0 + c)];
                        dqkv[at(b, j, v0 + c)] += p[j] * dO[c];
                    }
                }
            }
        }
    return dqkv;
}

// The backward splits each (b, g)'s query blocks into chunks when there are too few (b, g)
// for the threads, and adds the chunks' key/value partial sums afterwards; how many chunks
// depends on the thread count. Every element of dqkv matches the double reference at every
// thread count, with and without chunks (Hkv 4 on 2 threads is the unchunked path), and
// repeats bitwise at a given count. The forward's items are (query block, b, h) on a dynamic
// schedule: its out and lse are bitwise the same at every thread count.
TEST(TransformerAttention, BackwardAtEveryThreadCountMatchesTheReference) {
    struct Shape {
        int B, T, H, Hkv;
    };
    const int D = 16;
    // 1 x 600 on 3 or more threads asks for more chunks than the cap of 8 (of 10 blocks).
    for (Shape sh :
         {Shape{1, 333, 4, 1}, Shape{2, 200, 4, 2}, Shape{2, 130, 4, 4}, Shape{1, 600, 2, 1}}) {
        const int ld = (sh.H + 2 * sh.Hkv) * D;
        auto qkv = randn(std::size_t(sh.B) * sh.T * ld, 271 + sh.T);
        auto dout = randn(std::size_t(sh.B) * sh.T * sh.H * D, 272 + sh.T);
        const auto slopes = alibi_slopes(sh.H);
        std::vector<double> out_ref, lse_ref;
        attention_reference(out_ref, lse_ref, qkv, sh.B, sh.T, sh.H, sh.Hkv, D, slopes.data(),
                            nullptr);
        const auto want = attention_backward_reference(qkv, dout, lse_ref, sh.B, sh.T, sh.H, sh.Hkv,
                                                       D, slopes.data());
        std::vector<float> out1, lse1;  // the forward on 1 thread
        for (int threads : {1, 2, 3, 4, 7}) {
            const std::string tag = "B " + std::to_string(sh.B) + " T " + std::to_string(sh.T) +
                                    " Hkv " + std::to_string(sh.Hkv) + " threads " +
                                    std::to_string(threads);
            SCOPED_TRACE(tag);
            set_thread_count(threads);
            std::vector<float> out(std::size_t(sh.B) * sh.T * sh.H * D);
            std::vector<float> lse(std::size_t(sh.B) * sh.H * sh.T);
            kn::attention_forward(out.data(), lse.data(), qkv.data(), sh.B, sh.T, sh.H, sh.Hkv, D,
                                  slopes.data());
            if (threads == 1) out1 = out, lse1 = lse;
            EXPECT_TRUE(bitwise_equal(out, out1)) << "forward out";
            EXPECT_TRUE(bitwise_equal(lse, lse1)) << "forward lse";
            auto run = [&] {
                auto d = nan_filled(qkv.size());
                kn::attention_backward(d.data(), dout.data(), out.data(), lse.data(), qkv.data(),
                                       sh.B, sh.T, sh.H, sh.Hkv, D, slopes.data());
                return d;
            };
            const auto got = run();
            // Sums of up to G T terms of O(1) in float against double: errors ~1e-6 seen.
            expect_close("attention dqkv, " + tag, got, want, {5e-6, 5e-6});
            EXPECT_TRUE(bitwise_equal(got, run()));
        }
        set_thread_count(2);
    }
}

// Decoding position t - 1 over a cache of the first t keys and values gives attention_forward's
// row t - 1, with grouped heads and ALiBi.
TEST(TransformerAttention, DecodeMatchesForwardRows) {
    const int S = 3, T = 40, Tmax = 48, H = 4, D = 16;
    for (int Hkv : {4, 2, 1})
        for (bool alibi : {false, true}) {
            SCOPED_TRACE("Hkv " + std::to_string(Hkv) + (alibi ? " alibi" : ""));
            const int ld = (H + 2 * Hkv) * D;
            auto qkv = randn(std::size_t(S) * T * ld, 261 + Hkv);
            const auto slopes = alibi_slopes(H);
            const float* sl = alibi ? slopes.data() : nullptr;
            std::vector<float> out(std::size_t(S) * T * H * D), lse(std::size_t(S) * H * T);
            kn::attention_forward(out.data(), lse.data(), qkv.data(), S, T, H, Hkv, D, sl);
            std::vector<float> kc(std::size_t(S) * Hkv * Tmax * D, NAN), vc = kc;
            for (int s = 0; s < S; ++s)
                for (int g = 0; g < Hkv; ++g)
                    for (int t = 0; t < T; ++t)
                        for (int d = 0; d < D; ++d) {
                            const std::size_t c = ((std::size_t(s) * Hkv + g) * Tmax + t) * D + d;
                            const std::size_t r = std::size_t(s * T + t) * ld;
                            kc[c] = qkv[r + (H + g) * D + d];
                            vc[c] = qkv[r + (H + Hkv + g) * D + d];
                        }
            const std::vector<std::int32_t> seq = {2, 0, 1};  // rows in another order
            for (int t : {1, 17, 40}) {
                std::vector<float> q(std::size_t(S) * H * D), got(std::size_t(S) * H * D);
                std::vector<double> want(got.size());
                for (int m = 0; m < S; ++m) {
                    const std::size_t r = std::size_t(seq[m] * T + t - 1);
                    std::copy_n(&qkv[r * ld], H * D, &q[std::size_t(m) * H * D]);
                    for (int c = 0; c < H * D; ++c)
                        want[std::size_t(m) * H * D + c] = out[r * H * D + c];
                }
                kn::attention_decode(got.data(), q.data(), H * D, kc.data(), vc.data(), seq.data(),
                                     S, t, Tmax, H, Hkv, D, sl);
                // Two float paths (GEMM blocks vs dot products) of the same softmax: ~1e-6.
                expect_close("decode vs forward t=" + std::to_string(t), got, want, {1e-5, 1e-5});
            }
        }
}

// ---------------------------------------------------------------------------------------------
// RoPE

std::vector<float> rope_inv_freq(int rope_dim, float base = 10000.f) {
    std::vector<float> f(rope_dim / 2);
    for (int i = 0; i < rope_dim / 2; ++i) f[i] = std::pow(base, -2.f * i / rope_dim);
    return f;
}

struct RopeSetup {
    int N = 10, T = 4, heads = 3, D = 16, rope_dim = 12, ld = 3 * 16 + 5;
    std::vector<std::int32_t> pos = {0, 1, 2, 3, 17, 255, 1000, 4095, 7, 2047};
};

TEST(TransformerRope, BackwardIsTheTransposeAndReference) {
    RopeSetup s;
    const auto inv = rope_inv_freq(s.rope_dim);
    for (bool interleaved : {false, true})
        for (bool with_pos : {true, false}) {
            const std::string tag = std::string("rope ") + (interleaved ? "interleaved" : "half") +
                                    (with_pos ? " pos" : " n%T");
            SCOPED_TRACE(tag);
            const std::int32_t* pos = with_pos ? s.pos.data() : nullptr;
            auto x = randn(std::size_t(s.N) * s.ld, 271), R = randn(x.size(), 272);
            std::vector<float> y;
            auto objective = [&] {
                y = x;
                kn::rope_forward(y.data(), s.ld, pos, s.N, s.T, s.heads, s.D, s.rope_dim,
                                 interleaved, inv.data());
                return dot(y, R);
            };
            objective();
            // Reference: each pair turned by the float angle float(p) * inv_freq[i], in double.
            std::vector<double> ref = to_double(x);
            const int half = s.rope_dim / 2;
            for (int n = 0; n < s.N; ++n) {
                const int p = with_pos ? s.pos[n] : n % s.T;
                for (int h = 0; h < s.heads; ++h)
                    for (int i = 0; i < half; ++i) {
                        const double a = float(p) * inv[i];
                        const std::size_t base = std::size_t(n) * s.ld + h * s.D;
                        const std::size_t i0 = base + (interleaved ? 2 * i : i);
                        const std::size_t i1 = base + (interleaved ? 2 * i + 1 : i + half);
                        ref[i0] = x[i0] * std::cos(a) - x[i1] * std::sin(a);
                        ref[i1] = x[i0] * std::sin(a) + x[i1] * std::cos(a);
                    }
            }
            // Two products and a sum of O(1) values: a few 2^-24.
            expect_close(tag + " forward", y, ref, {1e-6, 1e-6});
            // Columns past rope_dim in each head and past the heads in each row pass through.
            for (int n = 0; n < s.N; ++n)
                for (int c = 0; c < s.ld; ++c)
                    if (c >= s.heads * s.D || c % s.D >= s.rope_dim) {
                        ASSERT_EQ(y[n * s.ld + c], x[n * s.ld + c]) << "column " << c;
                    }

            auto dx = R;
            kn::rope_backward(dx.data(), s.ld, pos, s.N, s.T, s.heads, s.D, s.rope_dim, interleaved,
                              inv.data());
            // L is linear in x; each element reaches 2 outputs.
            check_gradient(tag + " dx", x, to_double(dx), objective, kLinearStep, {1e-5, 1e-5});

            // Backward after forward is the identity (R^T R = 1), pairs keep their norms.
            objective();  // y of the unperturbed x
            auto back = y;
            kn::rope_backward(back.data(), s.ld, pos, s.N, s.T, s.heads, s.D, s.rope_dim,
                              interleaved, inv.data());
            expect_close(tag + " backward(forward(x))", back, to_double(x), {1e-6, 1e-6});
            std::vector<float> norm_y;
            std::vector<double> norm_x;
            for (int n = 0; n < s.N; ++n)
                for (int h = 0; h < s.heads; ++h)
                    for (int i = 0; i < half; ++i) {
                        const std::size_t base = std::size_t(n) * s.ld + h * s.D;
                        const std::size_t i0 = base + (interleaved ? 2 * i : i);
                        const std::size_t i1 = base + (interleaved ? 2 * i + 1 : i + half);
                        norm_y.push_back(std::hypot(y[i0], y[i1]));
                        norm_x.push_back(std::hypot(double(x[i0]), double(x[i1])));
                    }
            expect_close(tag + " pair norms", norm_y, norm_x, {1e-6, 1e-6});
        }
}

// Interleaved pairs (2i, 2i+1) are split halves (i, i + rope_dim/2) on permuted dims, and
// positions n % T are the same as passing them.
TEST(TransformerRope, InterleavedIsHalfOnPermutedDims) {
    RopeSetup s;
    const auto inv = rope_inv_freq(s.rope_dim);
    const int half = s.rope_dim / 2;
    auto x = randn(std::size_t(s.N) * s.ld, 281);
    // perm[c] = where column c of a head in the interleaved layout sits in the half layout.
    std::vector<int> perm(s.D);
    for (int c = 0; c < s.D; ++c)
        perm[c] = c >= s.rope_dim ? c : (c % 2 == 0 ? c / 2 : c / 2 + half);
    auto permuted = [&](const std::vector<float>& v) {
        std::vector<float> w = v;
        for (int n = 0; n < s.N; ++n)
            for (int h = 0; h < s.heads; ++h)
                for (int c = 0; c < s.D; ++c)
                    w[std::size_t(n) * s.ld + h * s.D + perm[c]] =
                        v[std::size_t(n) * s.ld + h * s.D + c];
        return w;
    };
    for (bool forward : {true, false}) {
        auto op = forward ? kn::rope_forward : kn::rope_backward;
        auto a = x, b = permuted(x);
        op(a.data(), s.ld, s.pos.data(), s.N, s.T, s.heads, s.D, s.rope_dim, true, inv.data());
        op(b.data(), s.ld, s.pos.data(), s.N, s.T, s.heads, s.D, s.rope_dim, false, inv.data());
        EXPECT_TRUE(bitwise_equal(permuted(a), b)) << (forward ? "forward" : "backward");
    }
    std::vector<std::int32_t> mod(s.N);
    for (int n = 0; n < s.N; ++n) mod[n] = n % s.T;
    auto a = x, b = x;
    kn::rope_forward(a.data(), s.ld, nullptr, s.N, s.T, s.heads, s.D, s.rope_dim, false,
                     inv.data());
    kn::rope_forward(b.data(), s.ld, mod.data(), s.N, s.T, s.heads, s.D, s.rope_dim, false,
                     inv.data());
    EXPECT_TRUE(bitwise_equal(a, b)) << "pos null vs n % T";
}

// The angle table of the n % T path is kept between calls: a call with other frequencies or
// another T must not read the previous call's angles. Each call is checked against the explicit
// positions path, which computes its angles per row.
TEST(TransformerRope, KeptAngleTableFollowsFrequenciesAndT) {
    RopeSetup s;
    auto x = randn(std::size_t(s.N) * s.ld, 291);
    struct Case {
        float base;
        int T;
    };
    for (Case c : {Case{10000.f, 4}, Case{500000.f, 4}, Case{500000.f, 5}, Case{10000.f, 4}}) {
        SCOPED_TRACE("base " + std::to_string(c.base) + " T " + std::to_string(c.T));
        const auto inv = rope_inv_freq(s.rope_dim, c.base);
        std::vector<std::int32_t> mod(s.N);
        for (int n = 0; n < s.N; ++n) mod[n] = n % c.T;
        for (bool forward : {true, false}) {
            auto op = forward ? kn::rope_forward : kn::rope_backward;
            auto a = x, b = x;
            op(a.data(), s.ld, nullptr, s.N, c.T, s.heads, s.D, s.rope_dim, false, inv.data());
            op(b.data(), s.ld, mod.data(), s.N, c.T, s.heads, s.D, s.rope_dim, false, inv.data());
            EXPECT_TRUE(bitwise_equal(a, b)) << (forward ? "forward" : "backward");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Dropout

TEST(TransformerDropout, RateZeroIsABitwiseNoOp) {
    auto x = randn(1000, 291);
    x[3] = std::numeric_limits<float>::quiet_NaN();
    x[4] = -0.f;
    x[5] = std::numeric_limits<float>::denorm_min();
    const auto before = x;
    kn::dropout(x.data(), 10, 100, 0.f, 1, 2, 3);
    EXPECT_EQ(std::memcmp(x.data(), before.data(), x.size() * sizeof(float)), 0);
}

TEST(TransformerDropout, MaskIsPhiloxAndIndependentOfBatching) {
    const int N = 300, C = 1001;
    const float rate = 0.3f;
    const std::uint64_t seed = 42, stream = 9;
    const std::int64_t row0 = 5;
    // Ones make the kernel's output its scale: 0 or 1 / (1 - rate).
    std::vector<float> ones(std::size_t(N) * C, 1.f), a = ones;
    kn::dropout(a.data(), N, C, rate, seed, stream, row0);
    const float keep = 1.f / (1.f - rate);
    long kept = 0;
    for (int n = 0; n < N; ++n)
        for (int c = 0; c < C; ++c) {
            const float u = philox_uniform(seed, stream, std::uint64_t(row0 + n) * C + c);
            const float want = u >= rate ? keep : 0.f;
            ASSERT_EQ(a[std::size_t(n) * C + c], want) << "row " << n << " column " << c;
            kept += u >= rate;
        }
    // Kept fraction: binomial(N C, 1 - rate), within 6 standard deviations.
    const double total = double(N) * C, sd = std::sqrt(total * rate * (1 - rate));
    EXPECT_NEAR(double(kept), total * (1 - rate), 6 * sd);
    std::printf("[ checked  ] dropout kept %ld of %.0f (expected %.0f +- %.0f)\n", kept, total,
                total * (1 - rate), sd);

    // Same arguments, same mask; the rows of a later batch see the same draws at their global
    // rows; a single thread draws the same mask.
    auto b = ones;
    kn::dropout(b.data(), N, C, rate, seed, stream, row0);
    EXPECT_TRUE(bitwise_equal(a, b));
    std::vector<float> tail(ones.begin() + 100 * C, ones.end());
    kn::dropout(tail.data(), N - 100, C, rate, seed, stream, row0 + 100);
    EXPECT_TRUE(bitwise_equal(tail, std::vector<float>(a.begin() + 100 * C, a.end())));
    set_thread_count(1);
    auto c1 = ones;
    kn::dropout(c1.data(), N, C, rate, seed, stream, row0);
    set_thread_count(2);
    EXPECT_TRUE(bitwise_equal(a, c1));
    // Another stream is another mask.
    auto d = ones;
    kn::dropout(d.data(), N, C, rate, seed, stream + 1, row0);
    EXPECT_FALSE(bitwise_equal(a, d));
}

TEST(TransformerDropout, TwiceIsTheMaskSquared) {
    const int N = 37, C = 45;
    const float rate = 0.25f, keep = 1.f / (1.f - rate);
    auto x = randn(std::size_t(N) * C, 292);
    auto once = x;
    kn::dropout(once.data(), N, C, rate, 7, 1, 0);
    auto twice = once;
    kn::dropout(twice.data(), N, C, rate, 7, 1, 0);
    for (std::size_t i = 0; i < x.size(); ++i) {
        const bool kept = once[i] != 0.f;
        ASSERT_EQ(once[i], kept ? x[i] * keep : 0.f) << i;
        ASSERT_EQ(twice[i], kept ? (x[i] * keep) * keep : 0.f) << i;
    }
}

// ---------------------------------------------------------------------------------------------
// Cross-entropy with z-loss

struct CeSetup {
    static constexpr int N = 7, V = 37, ldv = 40;
    std::vector<std::int32_t> targets = {0, 36, 5, -1, 17, 36, 9};
    std::vector<float> logits;
    CeSetup() {
        // Row 5's logits sit around 20 (lse ~ 22), so the z term dominates its gradient.
        logits = randn(std::size_t(N) * ldv, 301, 2.f);
        for (int v = 0; v < V; ++v) logits[5 * ldv + v] += 20.f;
    }
};

TEST(TransformerCrossEntropy, ZLossGradient) {
    CeSetup s;
    const int N = s.N, V = s.V, ldv = s.ldv;
    const float scale = 0.37f, z = 0.05f;
    auto logits = s.logits;
    std::vector<float> losses(N), losses_plain(N);
    auto lse_of = [&](int n) {
        const float* x = &logits[std::size_t(n) * ldv];
        const double mx = *std::max_element(x, x + V);
        double sum = 0;
        for (int v = 0; v < V; ++v) sum += std::exp(x[v] - mx);
        return mx + std::log(sum);
    };
    // L = scale * sum_n (loss_n + z lse_n^2) over rows with a target: the kernel's losses plus
    // the z term in double.
    auto objective = [&] {
        kn::softmax_cross_entropy(logits.data(), losses.data(), s.targets.data(), N, V, ldv, 0.f,
                                  z);
        double l = 0;
        for (int n = 0; n < N; ++n)
            if (s.targets[n] >= 0) l += double(scale) * (losses[n] + z * lse_of(n) * lse_of(n));
        return l;
    };
    objective();
    // The z term never enters the losses.
    auto copy = logits;
    kn::softmax_cross_entropy(copy.data(), losses_plain.data(), s.targets.data(), N, V, ldv, 0.f);
    EXPECT_EQ(losses, losses_plain);

    auto grad = logits;
    for (int n = 0; n < N; ++n)
        for (int v = V; v < ldv; ++v) grad[n * ldv + v] = 1234.5f;
    kn::softmax_cross_entropy(grad.data(), losses.data(), s.targets.data(), N, V, ldv, scale, z);
    EXPECT_EQ(losses, losses_plain);
    std::vector<std::size_t> probes;
    for (int n = 0; n < N; ++n) {
        for (int v = V; v < ldv; ++v) EXPECT_EQ(grad[n * ldv + v], 1234.5f) << "padding, row " << n;
        for (int v = 0; v < V; ++v) {
            probes.push_back(n * ldv + v);
            if (s.targets[n] < 0) {
                EXPECT_EQ(grad[n * ldv + v], 0.f) << "ignored row " << n;
            }
        }
    }
    // kernels_grad_test's cross-entropy budget: one loss per logit, rounding of logits ~20
    // times scale over 2h ~ 2e-5; the double z term adds none.
    check_gradient("cross-entropy z-loss dlogits", logits, to_double(grad), objective, kStep,
                   {5e-4, 1e-3}, probes);
}

// The 3-phase vocabulary-parallel path with one rank (v0 = 0) is softmax_cross_entropy, z-loss
// included, and zeroes the padding columns of the gradient.
TEST(TransformerCrossEntropy, VocabParallelOneRankMatches) {
    CeSetup s;
    const int N = s.N, V = s.V, ldv = s.ldv;
    const float z = 0.05f;
    for (float scale : {0.37f, 0.f}) {
        SCOPED_TRACE("scale " + std::to_string(scale));
        auto ref = s.logits, x = s.logits;
        for (int n = 0; n < N; ++n)
            for (int v = V; v < ldv; ++v) x[n * ldv + v] = 1234.5f;
        std::vector<float> ref_losses(N), losses(N), row_max(N), stats(2 * N);
        kn::softmax_cross_entropy(ref.data(), ref_losses.data(), s.targets.data(), N, V, ldv, scale,
                                  z);
        kn::ce_row_max(row_max.data(), x.data(), s.targets.data(), N, V, ldv);
        kn::ce_row_sums(stats.data(), x.data(), s.targets.data(), row_max.data(), 0, N, V, ldv,
                        scale != 0.f);
        kn::ce_finish(x.data(), losses.data(), s.targets.data(), row_max.data(), stats.data(), 0, N,
                      V, ldv, scale, z);
        // The same float operations in another order: losses to ~2^-24 of lse ~ 22.
        for (int n = 0; n < N; ++n) EXPECT_NEAR(losses[n], ref_losses[n], 1e-5f) << "row " << n;
        if (scale == 0.f) {
            for (int n = 0; n < N; ++n)
                for (int v = V; v < ldv; ++v)
                    EXPECT_EQ(x[n * ldv + v], 1234.5f) << "padding with no gradient, row " << n;
            continue;
        }
        for (int n = 0; n < N; ++n) {
            for (int v = 0; v < V; ++v)
                ASSERT_NEAR(x[n * ldv + v], ref[n * ldv + v], 1e-6f) << "row " << n << " " << v;
            for (int v = V; v < ldv; ++v) EXPECT_EQ(x[n * ldv + v], 0.f) << "padding, row " << n;
        }
    }
}

}  // namespace
}  // namespace meshlm
