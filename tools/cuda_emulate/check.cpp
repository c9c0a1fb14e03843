// kernels/cuda/ run under the host emulation (shim/) against the CPU kernels, op by op, on small
// awkward shapes: the same comparisons as tests/cuda/cuda_ops_test.cpp, without a GPU. A pass
// says the kernels' indexing, tiling, barriers, shuffles and reductions compute what the CPU
// computes; it says nothing of speed or of anything the emulation does not model (shim/
// cuda_runtime.h). Built and run by run.sh.
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "meshlm/core/threads.h"
#include "meshlm/kernels/cuda/cuda_kernels.h"
#include "meshlm/kernels/kernels.h"
#include "meshlm/kernels/vocab_parallel.h"

namespace k = meshlm::kernels;
namespace kc = meshlm::kernels::cuda;

namespace {

int g_failures = 0;

std::vector<float> randn(std::size_t n, unsigned seed, float sd = 1.f, float mean = 0.f) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(mean, sd);
    std::vector<float> v(n);
    for (auto& x : v) x = dist(rng);
    return v;
}

// The known values "+=" outputs start from.
std::vector<float> pattern(std::size_t n) {
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = 0.25f * float(int(i % 9) - 4) + 0.125f;
    return v;
}

// |got - want| <= abs + rel |want| everywhere; prints the worst element.
void compare(const char* what, const std::vector<float>& got, const std::vector<float>& want,
             double abs, double rel) {
    double worst = 0, max_err = 0;
    std::size_t at = 0;
    bool ok = got.size() == want.size();
    for (std::size_t i = 0; ok && i < want.size(); ++i) {
        const double err = std::fabs(double(got[i]) - want[i]);
        const double allowed = abs + rel * std::fabs(want[i]);
        if (!(err <= allowed)) ok = false;  // also NaN
        if (err > max_err || err != err) max_err = err, at = i;
        if (allowed > 0) worst = std::max(worst, err / allowed);
    }
    if (!ok) ++g_failures;
    std::printf("%-4s %-24s %7zu values  max |err| %.2e  max err/allowed %.3f  (at %zu)\n",
                ok ? "ok" : "FAIL", what, want.size(), max_err, worst, at);
}

void gemms() {
    const int M = 13, N = 9, K = 21;
    for (bool ta : {false, true})
        for (bool tb : {false, true}) {
            const auto A = randn(M * K, 1), B = randn(K * N, 2);
            const int lda = ta ? M : K, ldb = tb ? K : N;
            auto c1 = randn(M * N, 3), c2 = c1;
            k::gemm(ta, tb, M, N, K, 0.5f, A.data(), lda, B.data(), ldb, 0.25f, c1.data(), N);
            kc::gemm(ta, tb, M, N, K, 0.5f, A.data(), lda, B.data(), ldb, 0.25f, c2.data(), N);
            compare("gemm f32", c2, c1, 1e-5, 1e-5);
            std::vector<std::uint16_t> a16(A.size()), b16(B.size());
            k::to_bf16(a16.data(), A.data(), A.size());
            k::to_bf16(b16.data(), B.data(), B.size());
            std::vector<float> d1(M * N), d2(M * N);
            k::gemm_bf16(ta, tb, M, N, K, 1.f, a16.data(), lda, b16.data(), ldb, 0.f, d1.data(), N);
            kc::gemm_bf16(ta, tb, M, N, K, 1.f, a16.data(), lda, b16.data(), ldb, 0.f, d2.data(),
                          N);
            compare("gemm bf16", d2, d1, 1e-5, 1e-5);
        }
}

void norms() {
    const int N = 5, C = 300;
    const auto x = randn(N * C, 4, 2.f, 0.5f), w = randn(C, 5, 0.5f, 1.f), b = randn(C, 6);
    const auto dout = randn(N * C, 7);
    std::vector<float> o1(N * C), o2(N * C), m1(N), m2(N), r1(N), r2(N);
    k::layernorm_forward(o1.data(), m1.data(), r1.data(), x.data(), w.data(), b.data(), N, C,
                         1e-5f);
    kc::layernorm_forward(o2.data(), m2.data(), r2.data(), x.data(), w.data(), b.data(), N, C,
                          1e-5f);
    compare("layernorm out", o2, o1, 1e-5, 1e-5);
    compare("layernorm mean", m2, m1, 1e-6, 1e-5);
    compare("layernorm rstd", r2, r1, 1e-6, 1e-5);
    auto dx1 = pattern(N * C), dx2 = dx1, dw1 = pattern(C), dw2 = dw1, db1 = dw1, db2 = dw1;
    k::layernorm_backward(dx1.data(), dw1.data(), db1.data(), dout.data(), x.data(), w.data(),
                          m1.data(), r1.data(), N, C);
    kc::layernorm_backward(dx2.data(), dw2.data(), db2.data(), dout.data(), x.data(), w.data(),
                           m1.data(), r1.data(), N, C);
    compare("layernorm dx", dx2, dx1, 1e-5, 1e-5);
    compare("layernorm dw", dw2, dw1, 1e-5, 1e-5);
    compare("layernorm db", db2, db1, 1e-5, 1e-5);

    k::rmsnorm_forward(o1.data(), r1.data(), x.data(), w.data(), nullptr, N, C, 1e-6f);
    kc::rmsnorm_forward(o2.data(), r2.data(), x.data(), w.data(), nullptr, N, C, 1e-6f);
    compare("rmsnorm out", o2, o1, 1e-5, 1e-5);
    compare("rmsnorm rstd", r2, r1, 1e-6, 1e-5);
    dx1 = pattern(N * C), dx2 = dx1, dw1 = pattern(C), dw2 = dw1;
    k::rmsnorm_backward(dx1.data(), dw1.data(), nullptr, dout.data(), x.data(), w.data(), r1.data(),
                        N, C);
    kc::rmsnorm_backward(dx2.data(), dw2.data(), nullptr, dout.data(), x.data(), w.data(),
                         r1.data(), N, C);
    compare("rmsnorm dx", dx2, dx1, 1e-5, 1e-5);
    compare("rmsnorm dw", dw2, dw1, 1e-5, 1e-5);
}

// Row strides: C and A as column blocks of wider rows (lda, ldc beyond the block's width).
void strided_gemm() {
    const int M = 7, N = 5, K = 11, WA = 16, WC = 9;
    const auto A = randn(M * WA, 30), B = randn(N * K, 31);
    auto c1 = randn(M * WC, 32), c2 = c1;
    k::gemm(false, true, M, N, K, 1.f, A.data() + 3, WA, B.data(), K, 1.f, c1.data() + 2, WC);
    kc::gemm(false, true, M, N, K, 1.f, A.data() + 3, WA, B.data(), K, 1.f, c2.data() + 2, WC);
    compare("gemm column blocks", c2, c1, 1e-5, 1e-5);
}

// linear_forward fills the bias rows and runs the GEMM with beta 1; the bias adds are exact.
void linear() {
    const int N = 9, I = 14, O = 23;
    const auto x = randn(N * I, 33), W = randn(O * I, 34), b = randn(O, 35), dy = randn(N * O, 36);
    for (const float* bias : {b.data(), static_cast<const float*>(nullptr)}) {
        auto y1 = randn(N * O, 37), y2 = y1;
        k::linear_forward(y1.data(), x.data(), W.data(), bias, N, I, O);
        kc::linear_forward(y2.data(), x.data(), W.data(), bias, N, I, O);
        compare(bias ? "linear forward" : "linear forward, no b", y2, y1, 1e-5, 1e-5);
    }
    std::vector<float> dx1(N * I), dx2(N * I);
    auto dW1 = pattern(O * I), dW2 = dW1, db1 = pattern(O), db2 = db1;
    k::linear_backward(dx1.data(), dW1.data(), db1.data(), dy.data(), x.data(), W.data(), N, I, O);
    kc::linear_backward(dx2.data(), dW2.data(), db2.data(), dy.data(), x.data(), W.data(), N, I, O);
    compare("linear dx", dx2, dx1, 1e-5, 1e-5);
    compare("linear dW", dW2, dW1, 1e-5, 1e-5);
    compare("linear db", db2, db1, 1e-5, 1e-5);
    auto y1 = randn(N * O, 38), y2 = y1;
    k::add_bias(y1.data(), b.data(), N, O);
    kc::add_bias(y2.data(), b.data(), N, O);
    compare("add_bias", y2, y1, 0, 0);
}

void activations() {
    const int N = 3, F = 77;
    const auto h = randn(N * 2 * F, 8, 3.f), g2 = randn(N * 2 * F, 9), g1 = randn(N * F, 10);
    for (auto act : {k::Act::gelu_tanh, k::Act::gelu, k::Act::relu, k::Act::sqrelu, k::Act::silu}) {
        std::vector<float> a(h.size()), b(h.size()), o1(N * F), o2(N * F);
        k::activation_forward(act, a.data(), h.data(), h.size());
        kc::activation_forward(act, b.data(), h.data(), h.size());
        compare("activation", b, a, 1e-6, 1e-5);
        k::activation_backward(act, a.data(), h.data(), g2.data(), h.size());
        kc::activation_backward(act, b.data(), h.data(), g2.data(), h.size());
        compare("activation'", b, a, 1e-6, 1e-5);
        k::glu_forward(act, o1.data(), h.data(), N, F);
        kc::glu_forward(act, o2.data(), h.data(), N, F);
        compare("glu", o2, o1, 1e-6, 1e-5);
        k::glu_backward(act, a.data(), h.data(), g1.data(), N, F);
        kc::glu_backward(act, b.data(), h.data(), g1.data(), N, F);
        compare("glu'", b, a, 1e-6, 1e-5);
    }
}

void cross_entropy() {
    const int N = 4, V = 1003;
    const std::vector<std::int32_t> t = {5, -1, 1002, 0};
    for (float z : {0.f, 1e-3f})
        for (float scale : {0.25f, 0.f}) {
            auto l1 = randn(N * V, 11, 4.f), l2 = l1;
            std::vector<float> s1(N), s2(N);
            k::softmax_cross_entropy(l1.data(), s1.data(), t.data(), N, V, V, scale, z);
            kc::softmax_cross_entropy(l2.data(), s2.data(), t.data(), N, V, scale, z);
            compare("cross_entropy loss", s2, s1, 1e-6, 1e-5);
            compare("cross_entropy dlogits", l2, l1, 1e-7, 1e-4);
        }
}

void adamw() {
    const int n = 3000;
    auto p1 = randn(n, 12), m1 = randn(n, 14, 0.1f), v1 = randn(n, 15, 0.1f);
    const auto g = randn(n, 13);
    for (auto& v : v1) v = std::fabs(v);
    auto p2 = p1, m2 = m1, v2 = v1;
    for (long s = 1; s <= 3; ++s) {
        k::adamw(p1.data(), g.data(), m1.data(), v1.data(), n, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, s);
        kc::adamw(p2.data(), g.data(), m2.data(), v2.data(), n, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, s,
                  1.f);
    }
    compare("adamw p", p2, p1, 1e-7, 1e-6);
    compare("adamw m", m2, m1, 1e-7, 1e-6);
    compare("adamw v", v2, v1, 1e-7, 1e-6);
}

void rope() {
    const int N = 6, T = 3, H = 3, D = 16, W = 5 * D;
    for (bool interleaved : {false, true})
        for (int rd : {16, 6}) {
            std::vector<float> inv(rd / 2);
            for (int i = 0; i < rd / 2; ++i) inv[i] = std::pow(10000.f, -2.f * i / rd);
            std::vector<std::int32_t> pos(N);
            for (int n = 0; n < N; ++n) pos[n] = 1000 + 7 * n;
            auto a = randn(N * W, 16), b = a;
            k::rope_forward(a.data() + D, W, nullptr, N, T, H, D, rd, interleaved, inv.data());
            kc::rope_forward(b.data() + D, W, nullptr, N, T, H, D, rd, interleaved, inv.data());
            compare("rope forward", b, a, 1e-6, 1e-5);
            k::rope_backward(a.data() + D, W, pos.data(), N, T, H, D, rd, interleaved, inv.data());
            kc::rope_backward(b.data() + D, W, pos.data(), N, T, H, D, rd, interleaved, inv.data());
            compare("rope backward", b, a, 1e-6, 1e-5);
        }
}

void embeddings() {
    const int N = 20, T = 5, C = 70, v0 = 10, Vl = 20, P = 8;
    std::vector<std::int32_t> tok(N);
    for (int n = 0; n < N; ++n) tok[n] = (n * n + 3) % 40;  // repeats, some outside the range
    const auto wte = randn(Vl * C, 17), wpe = randn(P * C, 18), dout = randn(N * C, 19);
    std::vector<float> o1(N * C), o2(N * C);
    k::embedding_forward_vocab_range(o1.data(), tok.data(), wte.data(), v0, Vl, N, C);
    k::position_embedding_forward(o1.data(), wpe.data(), N, T, C);
    kc::embedding_forward_vocab_range(o2.data(), tok.data(), wte.data(), v0, Vl, N, C);
    kc::position_embedding_forward(o2.data(), wpe.data(), N, T, C);
    compare("embedding forward", o2, o1, 0, 0);
    auto d1 = pattern(Vl * C), d2 = d1, p1 = pattern(P * C), p2 = p1;
    k::embedding_backward_vocab_range(d1.data(), dout.data(), tok.data(), v0, Vl, N, C);
    k::position_embedding_backward(p1.data(), dout.data(), N, T, C);
    kc::embedding_backward_vocab_range(d2.data(), dout.data(), tok.data(), v0, Vl, N, C);
    kc::position_embedding_backward(p2.data(), dout.data(), N, T, C);
    compare("embedding dwte", d2, d1, 0, 0);  // both sum in token order
    compare("embedding dwpe", p2, p1, 0, 0);
}

void attention() {
    struct Case {
        int B, T, H, Hkv, D;
        bool alibi;
        float scale;
    };
    // D <= 64 and a multiple of 4 take the tiled kernels (64 x 64 tiles: T = 150 crosses two
    // tile edges, grouped heads), the rest the warp-per-row ones.
    for (const Case c : {Case{1, 45, 2, 1, 16, false, 0.f}, Case{2, 9, 4, 2, 40, true, 0.f},
                         Case{1, 33, 2, 2, 64, true, 0.3f}, Case{1, 150, 4, 2, 32, true, 0.f},
                         Case{1, 70, 2, 1, 20, false, 0.f}, Case{1, 3, 1, 1, 256, false, 0.f},
                         Case{1, 40, 2, 1, 66, true, 0.f}}) {
        const int W = (c.H + 2 * c.Hkv) * c.D;
        const std::size_t rows = std::size_t(c.B) * c.T;
        const auto qkv = randn(rows * W, 20), dout = randn(rows * c.H * c.D, 21);
        std::vector<float> slopes(c.H);
        for (int h = 0; h < c.H; ++h) slopes[h] = std::pow(2.f, -8.f * (h + 1) / c.H);
        const float* s = c.alibi ? slopes.data() : nullptr;
        std::vector<float> o1(rows * c.H * c.D), o2 = o1, l1(std::size_t(c.B) * c.H * c.T), l2 = l1;
        k::attention_forward(o1.data(), l1.data(), qkv.data(), c.B, c.T, c.H, c.Hkv, c.D, s,
                             nullptr, c.scale);
        kc::attention_forward(o2.data(), l2.data(), qkv.data(), c.B, c.T, c.H, c.Hkv, c.D, s,
                              nullptr, c.scale, nullptr);
        compare("attention out", o2, o1, 1e-5, 1e-4);
        compare("attention lse", l2, l1, 1e-5, 1e-5);
        std::vector<float> d1(qkv.size()), d2(qkv.size(), NAN);  // every element must be written
        k::attention_backward(d1.data(), dout.data(), o1.data(), l1.data(), qkv.data(), c.B, c.T,
                              c.H, c.Hkv, c.D, s, nullptr, c.scale);
        kc::attention_backward(d2.data(), dout.data(), o1.data(), l1.data(), qkv.data(), c.B, c.T,
                               c.H, c.Hkv, c.D, s, nullptr, c.scale, nullptr);
        compare("attention dqkv", d2, d1, 1e-5, 1e-4);
    }
}

// Dropout on the probabilities: the CPU's Philox mask regenerated in every pass. T over two
// key tiles (of 64 and of 32), grouped heads, a row and head offset (a later micro-batch, a
// tensor-parallel rank's heads), a rate that drops half.
void attention_dropout() {
    const int B = 2, T = 100, H = 4, Hkv = 2, D = 24, W = (H + 2 * Hkv) * D;
    const std::size_t rows = std::size_t(B) * T;
    const auto qkv = randn(rows * W, 80), dout = randn(rows * H * D, 81);
    for (const float rate : {0.1f, 0.5f}) {
        const k::AttnDropout drop{.rate = rate,
                                  .seed = 0x9e3779b97f4a7c15ull,
                                  .stream = 3,
                                  .row0 = 5,
                                  .head0 = 4,
                                  .n_head = 12};
        std::vector<float> o1(rows * H * D), o2 = o1, l1(std::size_t(B) * H * T), l2 = l1;
        k::attention_forward(o1.data(), l1.data(), qkv.data(), B, T, H, Hkv, D, nullptr, &drop,
                             0.f);
        kc::attention_forward(o2.data(), l2.data(), qkv.data(), B, T, H, Hkv, D, nullptr, &drop,
                              0.f, nullptr);
        std::vector<float> plain(o1.size()), pl(l1.size());  // the mask must change the output
        k::attention_forward(plain.data(), pl.data(), qkv.data(), B, T, H, Hkv, D, nullptr, nullptr,
                             0.f);
        if (plain == o1) ++g_failures, std::printf("FAIL attention dropout: no effect\n");
        compare("attention dropout out", o2, o1, 1e-5, 1e-4);
        compare("attention dropout lse", l2, l1, 1e-5, 1e-5);
        std::vector<float> d1(qkv.size()), d2(qkv.size(), NAN);
        k::attention_backward(d1.data(), dout.data(), o1.data(), l1.data(), qkv.data(), B, T, H,
                              Hkv, D, nullptr, &drop, 0.f);
        kc::attention_backward(d2.data(), dout.data(), o1.data(), l1.data(), qkv.data(), B, T, H,
                               Hkv, D, nullptr, &drop, 0.f, nullptr);
        compare("attention dropout dqkv", d2, d1, 1e-5, 1e-4);
    }
}

// --- Optimizer passes, clipping, bf16 conversions, residual ----------------------------------
// Element-wise ops that must give the CPU's bits are compared bit for bit; the optimizer steps
// within an ulp or two (either compiler may fuse a*b+c into an FMA, not always the same ones);
// the double sums within 1e-6 relative (different summation orders) and bitwise run to run.

// any_nan: a NaN matches any NaN, for arithmetic on a NaN (a GPU returns its canonical NaN,
// x86 the operand's quieted payload); everything else bit for bit.
template <typename T>
void same_bits(const char* what, const std::vector<T>& got, const std::vector<T>& want,
               bool any_nan = false) {
    std::size_t diff = 0, at = 0;
    for (std::size_t i = 0; i < want.size() && i < got.size(); ++i) {
        if constexpr (std::is_same_v<T, float>)
            if (any_nan && std::isnan(got[i]) && std::isnan(want[i])) continue;
        if (std::memcmp(&got[i], &want[i], sizeof(T)) != 0 && diff++ == 0) at = i;
    }
    const bool ok = got.size() == want.size() && diff == 0;
    if (!ok) ++g_failures;
    std::printf("%-4s %-24s %7zu values  %zu differ in their bits  (first at %zu)\n",
                ok ? "ok" : "FAIL", what, want.size(), diff, at);
}

void compare_sum(const char* what, double got, double want, double rel) {
    const double err = std::fabs(got - want), allowed = rel * std::fabs(want);
    const bool ok = err <= allowed;
    if (!ok) ++g_failures;
    std::printf("%-4s %-24s %.17g vs %.17g  rel err %.2e\n", ok ? "ok" : "FAIL", what, got, want,
                want != 0 ? err / std::fabs(want) : err);
}

// Calls sum() twice on fresh copies of its inputs: a deterministic reduction repeats its bits.
void repeats(const char* what, const std::function<double()>& sum) {
    const double a = sum(), b = sum();
    const bool ok = std::memcmp(&a, &b, sizeof a) == 0;
    if (!ok) ++g_failures;
    std::printf("%-4s %-24s run to run\n", ok ? "ok" : "FAIL", what);
}

void lion() {
    const int n = 3000;
    auto p1 = randn(n, 30), m1 = randn(n, 31, 0.1f);
    const auto g = randn(n, 32);
    auto p2 = p1, m2 = m1;
    for (int s = 0; s < 3; ++s) {
        k::lion(p1.data(), g.data(), m1.data(), n, 1e-3f, 0.9f, 0.99f, 0.1f, 0.5f);
        kc::lion(p2.data(), g.data(), m2.data(), n, 1e-3f, 0.9f, 0.99f, 0.1f, 0.5f);
    }
    compare("lion p", p2, p1, 1e-7, 1e-6);
    compare("lion m", m2, m1, 1e-7, 1e-6);
}

void adafactor_full() {
    const int n = 3001;
    const auto g = randn(n, 33);
    auto v1 = randn(n, 34, 0.1f);
    for (auto& v : v1) v = std::fabs(v);
    auto v2 = v1;
    const double s1 = k::adafactor_moment(v1.data(), g.data(), n, 0.8f, 1e-30f);
    const double s2 = kc::adafactor_moment(v2.data(), g.data(), n, 0.8f, 1e-30f);
    compare("adafactor_moment v", v2, v1, 0, 1e-6);
    compare_sum("adafactor_moment sum", s2, s1, 1e-6);
    repeats("adafactor_moment sum", [&] {
        auto v = v1;
        return kc::adafactor_moment(v.data(), g.data(), n, 0.8f, 1e-30f);
    });
    auto p1 = randn(n, 35), p2 = p1;
    k::adafactor_apply(p1.data(), g.data(), v1.data(), n, 1e-2f, 0.999f);
    kc::adafactor_apply(p2.data(), g.data(), v1.data(), n, 1e-2f, 0.999f);
    compare("adafactor_apply p", p2, p1, 1e-7, 1e-6);
}

// A run that starts and ends mid-row, spans more than one chunk of column rows, and sits at
// (row0, col0) of a larger tensor.
// The statistics' decay and the update's factors: rows shorter than the columns, longer (over
// the 256 threads), square; the CUDA call with the means in the factors' buffer, as the
// optimizer calls it. Positive statistics and means (sums of squares).
void adafactor_scales() {
    for (const auto& [R, C] : {std::pair<int, int>{37, 300}, {300, 37}, {64, 64}}) {
        std::vector<float> stats = randn(R + C, 93, 0.1f), means = randn(R + C, 94, 0.1f);
        for (float& x : stats) x = std::fabs(x) + 1e-3f;
        for (float& x : means) x = std::fabs(x) + 1e-3f;
        auto s1 = stats, s2 = stats, f2 = means;
        std::vector<float> f1(R + C);
        k::adafactor_factored_scales(s1.data(), f1.data(), means.data(), R, C, 0.8f);
        kc::adafactor_factored_scales(s2.data(), f2.data(), f2.data(), R, C, 0.8f);
        compare("adafactor stats", s2, s1, 0, 3e-7);
        compare("adafactor scales", f2, f1, 0, 1e-6);
    }
}

void adafactor_factored() {
    const std::int64_t width = 37, R = 80, C = 45;
    const k::MatrixRun run{width * 70 + 15, 20, width, 3, 5};
    const auto g = randn(run.n, 36);
    const auto rs = randn(R, 37, 0.3f, 1.f), cs = randn(C, 38, 0.3f, 1.f);
    std::vector<double> r1(R, 0.5), c1(C, 0.25), r2 = r1, c2 = c1;
    k::adafactor_factored_sums(g.data(), run, 1e-30f, r1.data(), c1.data());
    kc::adafactor_factored_sums(g.data(), run, 1e-30f, r2.data(), c2.data());
    compare("factored row sums", std::vector<float>(r2.begin(), r2.end()),
            std::vector<float>(r1.begin(), r1.end()), 0, 1e-6);
    compare("factored col sums", std::vector<float>(c2.begin(), c2.end()),
            std::vector<float>(c1.begin(), c1.end()), 0, 1e-6);
    const double q1 = k::adafactor_factored_sumsq(g.data(), run, rs.data(), cs.data());
    const double q2 = kc::adafactor_factored_sumsq(g.data(), run, rs.data(), cs.data());
    compare_sum("factored sumsq", q2, q1, 1e-6);
    repeats("factored sumsq",
            [&] { return kc::adafactor_factored_sumsq(g.data(), run, rs.data(), cs.data()); });
    auto p1 = randn(run.n, 39), p2 = p1;
    k::adafactor_factored_apply(p1.data(), g.data(), run, rs.data(), cs.data(), 1e-2f, 0.999f);
    kc::adafactor_factored_apply(p2.data(), g.data(), run, rs.data(), cs.data(), 1e-2f, 0.999f);
    compare("factored apply p", p2, p1, 1e-7, 1e-6);
}

float from_bits(std::uint32_t u) {
    float x;
    std::memcpy(&x, &u, sizeof x);
    return x;
}

// Rounding's edge cases: signed zeros, denormals, ties either way, the largest finite (rounds
// to infinity), infinities and NaNs (some round to infinity or carry into the sign), then a
// sweep of top halves with the low halves around a tie.
std::vector<float> bf16_cases() {
    std::vector<float> v;
    for (std::uint32_t u :
         {0x00000000u, 0x80000000u, 0x00000001u, 0x007FFFFFu, 0x807F8000u, 0x3F808000u, 0x3F818000u,
          0x3F80FFFFu, 0x7F7FFFFFu, 0x7F800000u, 0xFF800000u, 0x7FC00000u, 0x7F800001u, 0x7FFF8000u,
          0xFFFFFFFFu, 0xFFC00001u})
        v.push_back(from_bits(u));
    for (std::uint32_t hi = 0; hi < 65536; hi += 7)
        for (std::uint32_t lo : {0x0000u, 0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu})
            v.push_back(from_bits(hi << 16 | lo));
    return v;
}

void bf16_conversions() {
    const auto x = bf16_cases();
    const std::size_t n = x.size();
    std::vector<std::uint16_t> h1(n), h2(n);
    k::to_bf16(h1.data(), x.data(), n);
    kc::to_bf16(h2.data(), x.data(), n);
    same_bits("to_bf16", h2, h1);
    std::vector<float> f1(n), f2 = x;
    k::round_bf16(f1.data(), x.data(), n);
    kc::round_bf16(f2.data(), f2.data(), n);  // in place
    same_bits("round_bf16", f2, f1);
    std::vector<std::uint16_t> all(65536);
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<std::uint16_t>(i);
    std::vector<float> w1(all.size()), w2(all.size());
    k::from_bf16(w1.data(), all.data(), all.size());
    kc::from_bf16(w2.data(), all.data(), all.size());
    same_bits("from_bf16", w2, w1);
    // In place, at sizes that halve unevenly down to the last pass.
    for (std::size_t m : {std::size_t{1}, std::size_t{2}, std::size_t{3001}}) {
        std::vector<float> b1(m), b2(m);
        std::memcpy(b1.data(), all.data() + 1000, m * 2);
        std::memcpy(b2.data(), all.data() + 1000, m * 2);
        k::from_bf16_in_place(b1.data(), m);
        kc::from_bf16_in_place(b2.data(), m);
        same_bits("from_bf16_in_place", b2, b1);
    }
    const int rows = 23, cols = 61, ld = 100, col0 = 17;
    std::vector<std::uint16_t> r1(rows * cols), r2(rows * cols);
    k::to_bf16_rows(r1.data(), x.data() + col0, rows, cols, ld);
    kc::to_bf16_rows(r2.data(), x.data() + col0, rows, cols, ld);
    same_bits("to_bf16_rows", r2, r1);
    std::vector<float> o1(rows * cols), o2(rows * cols);
    k::from_bf16_rows(o1.data(), all.data() + col0, rows, cols, ld);
    kc::from_bf16_rows(o2.data(), all.data() + col0, rows, cols, ld);
    same_bits("from_bf16_rows", o2, o1);
}

void clipping_and_residual() {
    const int n = 5003;
    auto x = randn(n, 40, 2.f);
    for (std::uint32_t u : {0x7FC00000u, 0x7F800000u, 0xFF800000u, 0x80000000u, 0x00000001u})
        x[7 * (u % 97)] = from_bits(u);  // NaN, infinities, -0, a denormal
    auto a = x, b = x;
    k::clamp(a.data(), 1.5f, n);
    kc::clamp(b.data(), 1.5f, n);
    same_bits("clamp", b, a);
    k::scale(a.data(), 0.37f, n);
    kc::scale(b.data(), 0.37f, n);
    same_bits("scale", b, a, true);
    const auto y = randn(n, 41);
    std::vector<float> o1(n), o2 = a;
    k::residual_forward(o1.data(), a.data(), y.data(), n);
    kc::residual_forward(o2.data(), o2.data(), y.data(), n);  // out = a, in place
    same_bits("residual_forward", o2, o1, true);
    const int N = 41, C = n / N;
    const auto b1 = randn(C, 43), b2 = randn(C, 44);
    for (const float* p1 : {b1.data(), static_cast<const float*>(nullptr)})
        for (const float* p2 : {b2.data(), static_cast<const float*>(nullptr)}) {
            auto r1 = a, r2 = a;
            k::bias_residual(r1.data(), p1, p2, y.data(), N, C);
            kc::bias_residual(r2.data(), p1, p2, y.data(), N, C);
            same_bits("bias_residual", r2, r1, true);
        }
    const auto z = randn(n, 42, 3.f);
    compare_sum("sum_squares", kc::sum_squares(z.data(), n), k::sum_squares(z.data(), n), 1e-6);
    repeats("sum_squares", [&] { return kc::sum_squares(z.data(), n); });
}

// --- Model and decode ops ---

void dropouts() {
    // Odd C and row0 put the first and last Philox blocks part-way into the rows; seed and
    // stream set their high words. The mask must be the CPU's bit for bit.
    const int N = 7, C = 37;
    for (float rate : {0.f, 0.1f, 0.75f}) {
        auto a = randn(N * C, 30), b = a;
        k::dropout(a.data(), N, C, rate, 0x123456789abcdefull, 0xfedcba987ull, 3);
        kc::dropout(b.data(), N, C, rate, 0x123456789abcdefull, 0xfedcba987ull, 3);
        compare("dropout", b, a, 0, 0);
    }
}

void bias_backward() {
    // Rows not a multiple of the 16 row groups, columns not of the 32-column blocks.
    const int N = 301, O = 45;
    const auto dy = randn(N * O, 31);
    auto a = pattern(O), b = a;
    k::bias_backward(a.data(), dy.data(), N, O);
    kc::bias_backward(b.data(), dy.data(), N, O);
    compare("bias_backward", b, a, 2e-5, 1e-5);
}

void qk_norm() {
    // Heads from column D of rows of W (past a head, like qkv's k heads), D under and over a
    // warp, xhat read from a buffer of another stride.
    const int N = 5, H = 3;
    for (int D : {20, 72}) {
        const int W = 5 * D, Wx = 4 * D;
        auto a = randn(N * W, 32, 2.f, 0.3f), b = a;
        std::vector<float> r1(N * H), r2(N * H, NAN);
        k::qk_norm_forward(a.data() + D, W, r1.data(), N, H, D, 1e-6f);
        kc::qk_norm_forward(b.data() + D, W, r2.data(), N, H, D, 1e-6f);
        compare("qk_norm forward", b, a, 1e-6, 1e-5);
        compare("qk_norm rstd", r2, r1, 1e-7, 1e-5);
        const auto xhat = randn(N * Wx, 33);
        auto g1 = randn(N * W, 34), g2 = g1;
        k::qk_norm_backward(g1.data() + D, W, xhat.data() + D, Wx, r1.data(), N, H, D);
        kc::qk_norm_backward(g2.data() + D, W, xhat.data() + D, Wx, r1.data(), N, H, D);
        compare("qk_norm backward", g2, g1, 1e-5, 1e-5);
    }
}

// The decode attention's nonlinearities: softmax (with and without ALiBi) and two others.
struct DecodeCase {
    const char* name;
    k::AttnActParams act;
    bool alibi;
};
const DecodeCase kDecodeCases[] = {{"softmax", {}, false},
                                   {"softmax alibi", {}, true},
                                   {"norm_elu", {k::AttnAct::norm_elu, 1.f, 1e-5f}, true},
                                   {"sqrelu", {k::AttnAct::sqrelu, 512.f, 1e-5f}, false}};

void attention_decode() {
    // T over two 128-key tiles (and the CPU's 256), D under and over the 128 threads, rows
    // reading other sequences, grouped heads, a q row wider than its heads.
    const int M = 3, S = 4, T = 300, Tmax = 310, H = 4, Hkv = 2;
    const std::vector<std::int32_t> seq = {2, 0, 3};
    const std::vector<float> slopes = {0.5f, 0.25f, 0.125f, 0.0625f};
    for (int D : {40, 160})
        for (const DecodeCase& c : kDecodeCases) {
            const int ldq = (H + 1) * D;
            const auto q = randn(M * ldq, 35), kc_ = randn(S * Hkv * Tmax * D, 36),
                       vc = randn(S * Hkv * Tmax * D, 37);
            const float* sl = c.alibi ? slopes.data() : nullptr;
            std::vector<float> o1(M * H * D), o2(M * H * D, NAN);
            k::attention_decode(o1.data(), q.data(), ldq, kc_.data(), vc.data(), seq.data(), M, T,
                                Tmax, H, Hkv, D, sl, 0.f, &c.act);
            kc::attention_decode(o2.data(), q.data(), ldq, kc_.data(), vc.data(), seq.data(), M, T,
                                 Tmax, H, Hkv, D, sl, 0.f, &c.act, nullptr);
            compare((std::string("decode ") + c.name).c_str(), o2, o1, 1e-5, 1e-4);
        }
}

void attention_paged() {
    // Blocks of 16 in a scrambled order; lengths 1, a partial block, several tiles.
    const int M = 3, block = 16, nb = 40, per_row = 13, H = 4, Hkv = 1, D = 72;
    const std::vector<std::int32_t> lens = {1, 37, 200};
    std::vector<std::int32_t> tables(M * per_row);
    for (int i = 0; i < M * per_row; ++i) tables[i] = (i * 17 + 5) % nb;
    std::vector<const std::int32_t*> rows = {&tables[0], &tables[per_row], &tables[2 * per_row]};
    const std::vector<float> slopes = {0.5f, 0.25f, 0.125f, 0.0625f};
    const auto q = randn(M * H * D, 38), kp = randn(nb * Hkv * block * D, 39),
               vp = randn(nb * Hkv * block * D, 40);
    for (const DecodeCase& c : kDecodeCases) {
        const float* sl = c.alibi ? slopes.data() : nullptr;
        std::vector<float> o1(M * H * D), o2(M * H * D, NAN);
        k::attention_paged(o1.data(), q.data(), H * D, kp.data(), vp.data(), rows.data(),
                           lens.data(), M, block, H, Hkv, D, sl, 0.3f, &c.act);
        kc::attention_paged(o2.data(), q.data(), H * D, kp.data(), vp.data(), tables.data(),
                            per_row, lens.data(), M, block, H, Hkv, D, sl, 0.3f, &c.act, nullptr);
        compare((std::string("paged ") + c.name).c_str(), o2, o1, 1e-5, 1e-4);
    }
}

void linear_decode() {
    // M over one 4-row pass, I not a multiple of the 32 lanes, O not of the 8 warps.
    const int M = 6, I = 203, O = 45;
    const auto x = randn(M * I, 41), W = randn(O * I, 42, 0.1f), bias = randn(O, 43);
    std::vector<float> y1(M * O), y2(M * O, NAN);
    k::linear_decode(y1.data(), x.data(), W.data(), bias.data(), M, I, O);
    kc::linear_decode(y2.data(), x.data(), W.data(), bias.data(), M, I, O);
    compare("linear_decode", y2, y1, 2e-6, 1e-5);
    std::vector<std::uint16_t> w16(W.size());
    k::to_bf16(w16.data(), W.data(), W.size());
    y2.assign(M * O, NAN);
    k::linear_decode_bf16(y1.data(), x.data(), w16.data(), nullptr, M, I, O);
    kc::linear_decode_bf16(y2.data(), x.data(), w16.data(), nullptr, M, I, O);
    compare("linear_decode bf16", y2, y1, 2e-6, 1e-5);
}

void attention_act() {
    // Every nonlinearity, ALiBi on some, T over a 128-key tile on one, D over 128 threads on
    // one; dqkv starts as NaN, so every element must be written.
    struct Case {
        int B, T, H, Hkv, D;
        k::AttnActParams act;
        bool alibi;
    };
    const Case cases[] = {{2, 37, 4, 2, 24, {k::AttnAct::sqrelu, 64.f, 1e-5f}, false},
                          {2, 37, 4, 2, 24, {k::AttnAct::elu, 64.f, 1e-5f}, true},
                          {1, 150, 2, 1, 16, {k::AttnAct::norm_sqrelu, 1.f, 1e-5f}, true},
                          {1, 9, 2, 2, 136, {k::AttnAct::norm_elu, 1.f, 1e-5f}, false}};
    for (const Case& c : cases) {
        const int W = (c.H + 2 * c.Hkv) * c.D;
        const std::size_t rows = std::size_t(c.B) * c.T;
        const auto qkv = randn(rows * W, 44, 0.5f), dout = randn(rows * c.H * c.D, 45);
        std::vector<float> slopes(c.H);
        for (int h = 0; h < c.H; ++h) slopes[h] = std::pow(2.f, -8.f * (h + 1) / c.H);
        const float* s = c.alibi ? slopes.data() : nullptr;
        std::vector<float> o1(rows * c.H * c.D), o2(o1.size(), NAN);
        k::attention_act_forward(o1.data(), qkv.data(), c.B, c.T, c.H, c.Hkv, c.D, s, c.act);
        kc::attention_act_forward(o2.data(), qkv.data(), c.B, c.T, c.H, c.Hkv, c.D, s, c.act, 0.f);
        compare("attention_act out", o2, o1, 1e-5, 1e-4);
        std::vector<float> d1(qkv.size()), d2(qkv.size(), NAN);
        k::attention_act_backward(d1.data(), dout.data(), qkv.data(), c.B, c.T, c.H, c.Hkv, c.D, s,
                                  c.act);
        kc::attention_act_backward(d2.data(), dout.data(), qkv.data(), c.B, c.T, c.H, c.Hkv, c.D, s,
                                   c.act, 0.f);
        compare("attention_act dqkv", d2, d1, 1e-5, 1e-4);
    }
}

// --- The model's last pieces: the vocabulary-parallel loss, KV stores, positions, element-wise
// steps, host-read sums and Transformer-VQ's codebook ---

void vocab_parallel_loss() {
    // A shard of 13 valid columns at a row stride of 16 (padding zeroed by ce_finish).
    const int N = 5, Vl = 13, ld = 16, v0 = 26;
    const std::vector<std::int32_t> t = {26, -1, 38, 3, 30};
    for (float scale : {0.5f, 0.f}) {
        auto l1 = randn(N * ld, 50, 3.f), l2 = l1;
        std::vector<float> m1(N), m2(N), s1(2 * N), s2(2 * N), o1(N), o2(N);
        k::ce_row_max(m1.data(), l1.data(), t.data(), N, Vl, ld);
        kc::ce_row_max(m2.data(), l2.data(), t.data(), N, Vl, ld);
        same_bits("ce_row_max", m2, m1);
        k::ce_row_sums(s1.data(), l1.data(), t.data(), m1.data(), v0, N, Vl, ld, scale != 0.f);
        kc::ce_row_sums(s2.data(), l2.data(), t.data(), m1.data(), v0, N, Vl, ld, scale != 0.f);
        compare("ce_row_sums", s2, s1, 1e-6, 1e-5);
        compare("ce_row_sums exps", l2, l1, 1e-7, 1e-5);
        k::ce_finish(l1.data(), o1.data(), t.data(), m1.data(), s1.data(), v0, N, Vl, ld, scale,
                     1e-3f);
        kc::ce_finish(l2.data(), o2.data(), t.data(), m1.data(), s1.data(), v0, N, Vl, ld, scale,
                      1e-3f);
        compare("ce_finish loss", o2, o1, 1e-6, 1e-5);
        compare("ce_finish dlogits", l2, l1, 1e-7, 1e-5);
    }
}

void kv_store() {
    const int M = 3, H = 4, Hkv = 2, D = 5, W = (H + 2 * Hkv) * D, block = 3, blocks = 6, n = 2;
    const auto qkv = randn(M * W, 51);
    const std::vector<std::int32_t> tables = {5, 1, 0, 4, 2, 3}, pos = {4, 0, 5};
    auto k1 = pattern(blocks * Hkv * block * D), v1 = k1, k2 = k1, v2 = k1;
    k::kv_store(k1.data(), v1.data(), qkv.data(), W, tables.data(), n, pos.data(), M, blocks, block,
                H, Hkv, D);
    kc::kv_store(k2.data(), v2.data(), qkv.data(), W, tables.data(), n, pos.data(), M, block, H,
                 Hkv, D);
    same_bits("kv_store k", k2, k1);
    same_bits("kv_store v", v2, v1);
}

void positions() {
    const int B = 3, T = 7, N = B * T, C = 9, P = 40;
    const auto wpe = randn(T * C, 52), table = randn(P * C, 53), dout = randn(N * C, 54);
    const std::vector<float> scale = {0.7071f};
    const std::vector<std::int32_t> pos0 = {0, 13, 33};
    auto a = pattern(N * C), b = a;
    k::position_embedding_forward_bf16(a.data(), wpe.data(), N, T, C);
    kc::position_embedding_forward_bf16(b.data(), wpe.data(), N, T, C);
    same_bits("position bf16", b, a);
    for (bool round : {false, true}) {
        k::sinusoid_position_forward(a.data(), table.data(), scale.data(), pos0.data(), N, T, C,
                                     round);
        kc::sinusoid_position_forward(b.data(), table.data(), scale.data(), pos0.data(), N, T, C,
                                      round);
        compare("sinusoid forward", b, a, 1e-7, 1e-6);
    }
    std::vector<float> d1 = {0.25f}, d2 = d1;
    k::sinusoid_position_backward(d1.data(), dout.data(), table.data(), pos0.data(), N, T, C);
    kc::sinusoid_position_backward(d2.data(), dout.data(), table.data(), pos0.data(), N, T, C);
    compare("sinusoid dscale", d2, d1, 1e-6, 1e-6);
}

void elementwise_and_sums() {
    const int N = 37, C = 11, ld = 29;
    const auto a = randn(N * ld, 55), b = randn(N * C, 56);
    auto o1 = pattern(N * ld), o2 = o1;
    k::mul_rows(o1.data() + 3, ld, a.data() + 7, ld, b.data(), C, N, C);
    kc::mul_rows(o2.data() + 3, ld, a.data() + 7, ld, b.data(), C, N, C);
    same_bits("mul_rows", o2, o1);
    auto y1 = pattern(N * C), y2 = y1;
    k::axpy(y1.data(), b.data(), -0.37f, N * C);
    kc::axpy(y2.data(), b.data(), -0.37f, N * C);
    compare("axpy", y2, y1, 1e-7, 1e-6);
    k::fill(y1.data(), 1.5f, N * C);
    kc::fill(y2.data(), 1.5f, N * C);
    same_bits("fill", y2, y1);
    compare_sum("sum_f64", kc::sum_f64(a.data(), a.size()), k::sum_f64(a.data(), a.size()), 1e-12);
    compare_sum("abs_sum_rows", kc::abs_sum_rows(a.data() + 2, N, C, ld),
                k::abs_sum_rows(a.data() + 2, N, C, ld), 1e-12);
    const int B = 2, T = 9, H = 4, Hkv = 2, D = 8;
    const auto qkv = randn(B * T * (H + 2 * Hkv) * D, 57);
    compare_sum("attention_score_abs_sum",
                kc::attention_score_abs_sum(qkv.data(), B, T, H, Hkv, D, 0.3f),
                k::attention_score_abs_sum(qkv.data(), B, T, H, Hkv, D, 0.3f), 1e-6);
}

void vq_codebook() {
    const int S = 37, dk = 12, N = 45, ld = 2 * dk;
    const auto c_sum = randn(S * dk, 58);
    auto c_count = randn(S, 59, 2.f);
    c_count[3] = 0.f;
    std::vector<float> cb1(S * dk), cb2(S * dk);
    k::vq_codebook(cb1.data(), c_sum.data(), c_count.data(), S, dk);
    kc::vq_codebook(cb2.data(), c_sum.data(), c_count.data(), S, dk);
    same_bits("vq_codebook", cb2, cb1);
    const auto qk = randn(N * ld, 60);
    std::vector<std::int32_t> z1(N), z2(N);
    std::vector<float> e1(N), e2(N);
    k::vq_quantize(z1.data(), e1.data(), qk.data() + dk, ld, cb1.data(), N, S, dk);
    kc::vq_quantize(z2.data(), e2.data(), qk.data() + dk, ld, cb1.data(), N, S, dk);
    same_bits("vq_quantize codes", z2, z1);
    compare("vq_quantize err", e2, e1, 1e-6, 1e-5);
    auto g1 = pattern(N * ld), g2 = g1;
    k::vq_commit_grad(g1.data() + dk, ld, qk.data() + dk, ld, cb1.data(), z1.data(), N, dk, 0.3f);
    kc::vq_commit_grad(g2.data() + dk, ld, qk.data() + dk, ld, cb1.data(), z1.data(), N, dk, 0.3f);
    compare("vq_commit_grad", g2, g1, 1e-7, 1e-6);
    auto s1 = pattern(S * dk), s2 = s1, n1 = pattern(S), n2 = n1;
    k::vq_codebook_stats(s1.data(), n1.data(), qk.data() + dk, ld, z1.data(), N, S, dk);
    kc::vq_codebook_stats(s2.data(), n2.data(), qk.data() + dk, ld, z1.data(), N, S, dk);
    same_bits("vq_codebook_stats sums", s2, s1);
    same_bits("vq_codebook_stats counts", n2, n1);
}

// T5's distance bias: the training attention with a bias per distance and its gradient (a pass
// of its own on the GPU), with and without dropout; decoding with a bias shorter than the
// context (its last entry serves every farther key), dense and paged; the table's expansion
// and fold, bit for bit. The gradients add to known values.
void t5_bias() {
    const int B = 2, T = 40, H = 4, Hkv = 2, D = 24, W = (H + 2 * Hkv) * D, ld = T + 3;
    const std::size_t rows = std::size_t(B) * T;
    const auto qkv = randn(rows * W, 82), dout = randn(rows * H * D, 83);
    const auto bias = randn(std::size_t(H) * ld, 84, 0.5f);
    for (const float rate : {0.f, 0.3f}) {
        const k::AttnDropout drop{.rate = rate, .seed = 11, .stream = 2, .row0 = 1, .n_head = H};
        auto g1 = pattern(std::size_t(H) * ld), g2 = g1;
        const k::DistanceBias d1{bias.data(), g1.data(), ld}, d2{bias.data(), g2.data(), ld};
        std::vector<float> o1(rows * H * D), o2 = o1, l1(std::size_t(B) * H * T), l2 = l1;
        k::attention_forward(o1.data(), l1.data(), qkv.data(), B, T, H, Hkv, D, nullptr, &drop, 0.f,
                             &d1);
        kc::attention_forward(o2.data(), l2.data(), qkv.data(), B, T, H, Hkv, D, nullptr, &drop,
                              0.f, &d2);
        compare("t5 attention out", o2, o1, 1e-5, 1e-4);
        compare("t5 attention lse", l2, l1, 1e-5, 1e-5);
        std::vector<float> q1(qkv.size()), q2(qkv.size(), NAN);
        k::attention_backward(q1.data(), dout.data(), o1.data(), l1.data(), qkv.data(), B, T, H,
                              Hkv, D, nullptr, &drop, 0.f, &d1);
        kc::attention_backward(q2.data(), dout.data(), o1.data(), l1.data(), qkv.data(), B, T, H,
                               Hkv, D, nullptr, &drop, 0.f, &d2);
        compare("t5 attention dqkv", q2, q1, 1e-5, 1e-4);
        compare("t5 attention dbias", g2, g1, 1e-5, 1e-4);
    }
    // Decoding: 300 positions over a bias of 129 distances.
    const int M = 3, S = 4, Td = 300, Tmax = 310, ldd = 129;
    const std::vector<std::int32_t> seq = {2, 0, 3};
    const auto q = randn(M * H * D, 85), kc_ = randn(S * Hkv * Tmax * D, 86),
               vc = randn(S * Hkv * Tmax * D, 87), dbias = randn(std::size_t(H) * ldd, 88, 2.f);
    const k::DistanceBias dd{dbias.data(), nullptr, ldd};
    std::vector<float> o1(M * H * D), o2(M * H * D, NAN);
    k::attention_decode(o1.data(), q.data(), H * D, kc_.data(), vc.data(), seq.data(), M, Td, Tmax,
                        H, Hkv, D, nullptr, 0.f, nullptr, &dd);
    kc::attention_decode(o2.data(), q.data(), H * D, kc_.data(), vc.data(), seq.data(), M, Td, Tmax,
                         H, Hkv, D, nullptr, 0.f, nullptr, &dd);
    compare("t5 decode", o2, o1, 1e-5, 1e-4);
    // Paged: the dense caches as a pool of blocks of 10, row m's blocks in a rotated order.
    const int block = 10, per_row = Tmax / block;
    std::vector<std::int32_t> tables(M * per_row), lens = {Td, 131, 1};
    std::vector<float> kp(std::size_t(S) * Hkv * Tmax * D), vp = kp;
    for (int m = 0; m < M; ++m)
        for (int c = 0; c < per_row; ++c)
            tables[m * per_row + c] = (m * per_row + c * 7) % (S * per_row);
    std::vector<const std::int32_t*> trows = {&tables[0], &tables[per_row], &tables[2 * per_row]};
    const std::size_t pool = std::size_t(S) * per_row * Hkv * block * D;
    const auto kpool = randn(pool, 89), vpool = randn(pool, 90);
    std::vector<float> p1(M * H * D), p2(M * H * D, NAN);
    k::attention_paged(p1.data(), q.data(), H * D, kpool.data(), vpool.data(), trows.data(),
                       lens.data(), M, block, H, Hkv, D, nullptr, 0.f, nullptr, &dd);
    kc::attention_paged(p2.data(), q.data(), H * D, kpool.data(), vpool.data(), tables.data(),
                        per_row, lens.data(), M, block, H, Hkv, D, nullptr, 0.f, nullptr, &dd);
    compare("t5 paged", p2, p1, 1e-5, 1e-4);
    // The table: 6 buckets over 23 distances, the last ones shared.
    const int NB = 6, L = 23;
    std::vector<std::int32_t> buckets(L);
    for (int d = 0; d < L; ++d) buckets[d] = std::min(d < 3 ? d : 3 + (d - 3) / 4, NB - 1);
    const auto table = randn(H * NB, 91), grad = randn(H * L, 92);
    std::vector<float> e1(H * L), e2(H * L, NAN);
    k::distance_bias_expand(e1.data(), table.data(), buckets.data(), H, L, NB);
    kc::distance_bias_expand(e2.data(), table.data(), buckets.data(), H, L, NB);
    same_bits("distance_bias_expand", e2, e1);
    auto f1 = pattern(H * NB), f2 = f1;
    k::distance_bias_fold(f1.data(), grad.data(), buckets.data(), H, L, NB);
    kc::distance_bias_fold(f2.data(), grad.data(), buckets.data(), H, L, NB);
    same_bits("distance_bias_fold", f2, f1);
}

// Every group, in order; `check NAME...` runs only the named ones.
// Transformer-VQ's attention: T crossing block edges (the cache joins from the third block), a
// code never used (its cache column -inf), and carried states at positions off the block grid,
// a different one per row; both CPU reductions against the GPU's one.
struct VqCase {
    int B, T, L, S, dk, dv;
    bool carried;
    k::VqReduction reduction;
};

// Each row's state after a CPU forward over `lead[b]` tokens of its own inputs.
std::vector<k::VqAttnState> vq_lead_states(const VqCase& c, const std::vector<int>& lead,
                                           const std::vector<float>& cb,
                                           const std::vector<float>& rel,
                                           const std::vector<float>& u,
                                           const std::vector<float>& vb) {
    std::vector<k::VqAttnState> st(c.B);
    const k::VqAttnShape sh{c.L, c.S, c.dk, c.dv, c.reduction};
    for (int b = 0; b < c.B; ++b) {
        const int T = lead[b];
        const auto q = randn(T * c.dk, 80 + b), v = randn(T * c.dv, 90 + b);
        std::vector<std::int32_t> z(T);
        for (int t = 0; t < T; ++t) z[t] = (t * 7 + b) % (c.S - 1);
        std::vector<float> o(T * c.dv), l(T);
        k::vq_attention_forward(o.data(), l.data(), q.data(), c.dk, z.data(), v.data(), c.dv,
                                cb.data(), rel.data(), u.data(), vb.data(), 1, T, sh, &st[b]);
    }
    return st;
}

void vq_attention_case(const char* name, const VqCase& c) {
    const int N = c.B * c.T, ldq = 2 * c.dk, ldv = 2 * c.dv;
    const k::VqAttnShape sh{c.L, c.S, c.dk, c.dv, c.reduction};
    const auto cb = randn(c.S * c.dk, 70, 0.7f), rel = randn((c.L + 1) * c.dk, 71, 0.5f);
    const auto u = randn(c.dk, 72, 0.3f), vb = randn(c.dk, 73, 0.3f);
    const auto qk = randn(N * ldq, 74), act = randn(N * ldv, 75);
    std::vector<std::int32_t> z(N);
    std::mt19937 rng(76);
    for (auto& x : z) x = static_cast<std::int32_t>(rng() % (c.S - 1));  // code S - 1 unused
    std::vector<k::VqAttnState> st1, st2;
    if (c.carried) st1 = st2 = vq_lead_states(c, {13, 19, 5}, cb, rel, u, vb);
    std::vector<k::VqAttnState> start = st1;
    std::vector<float> o1(N * c.dv), o2(o1.size(), NAN), l1(N), l2(N, NAN);
    k::vq_attention_forward(o1.data(), l1.data(), qk.data(), ldq, z.data(), act.data(), ldv,
                            cb.data(), rel.data(), u.data(), vb.data(), c.B, c.T, sh,
                            c.carried ? st1.data() : nullptr);
    kc::vq_attention_forward(o2.data(), l2.data(), qk.data(), ldq, z.data(), act.data(), ldv,
                             cb.data(), rel.data(), u.data(), vb.data(), c.B, c.T, sh,
                             c.carried ? st2.data() : nullptr);
    const std::string n = name;
    compare((n + " out").c_str(), o2, o1, 1e-5, 1e-5);
    compare((n + " lse").c_str(), l2, l1, 1e-5, 1e-5);
    for (int b = 0; c.carried && b < c.B; ++b) {
        same_bits((n + " state pos").c_str(), std::vector<std::int64_t>{st2[b].pos},
                  std::vector<std::int64_t>{st1[b].pos});
        same_bits((n + " state codes").c_str(), st2[b].z, st1[b].z);
        same_bits((n + " state values").c_str(), st2[b].v, st1[b].v);
        compare((n + " state counts").c_str(), st2[b].count, st1[b].count, 0, 0);
        compare((n + " state means").c_str(), st2[b].mean, st1[b].mean, 1e-6, 1e-5);
    }
    const auto dout = randn(N * c.dv, 77);
    auto dqk1 = pattern(N * ldq), dqk2 = dqk1, dact1 = pattern(N * ldv), dact2 = dact1;
    auto vec1 = pattern((c.L + 3) * c.dk), vec2 = vec1;  // du | dvb | drel
    const k::VqAttnState* from = c.carried ? start.data() : nullptr;
    k::vq_attention_backward(dqk1.data(), dqk1.data() + c.dk, dact1.data(), vec1.data(),
                             vec1.data() + c.dk, vec1.data() + 2 * c.dk, dout.data(), o1.data(),
                             l1.data(), qk.data(), ldq, z.data(), act.data(), ldv, cb.data(),
                             rel.data(), u.data(), vb.data(), c.B, c.T, sh, from);
    kc::vq_attention_backward(dqk2.data(), dqk2.data() + c.dk, dact2.data(), vec2.data(),
                              vec2.data() + c.dk, vec2.data() + 2 * c.dk, dout.data(), o1.data(),
                              l1.data(), qk.data(), ldq, z.data(), act.data(), ldv, cb.data(),
                              rel.data(), u.data(), vb.data(), c.B, c.T, sh, from);
    compare((n + " dq | dk").c_str(), dqk2, dqk1, 1e-5, 1e-4);
    compare((n + " dv").c_str(), dact2, dact1, 1e-5, 1e-4);
    compare((n + " du | dvb | drel").c_str(), vec2, vec1, 1e-5, 1e-4);
}

void vq_attention() {
    using R = k::VqReduction;
    vq_attention_case("vq attn", {2, 29, 8, 6, 5, 7, false, R::serial});
    vq_attention_case("vq attn matmul", {2, 29, 8, 6, 5, 7, false, R::matmul});
    vq_attention_case("vq attn carried", {3, 21, 8, 6, 5, 7, true, R::serial});
    vq_attention_case("vq attn carried mm", {3, 21, 8, 6, 5, 7, true, R::matmul});
    vq_attention_case("vq attn step", {3, 1, 4, 5, 6, 3, true, R::serial});
    vq_attention_case("vq attn one block", {1, 6, 8, 4, 3, 40, false, R::serial});
}

const std::pair<const char*, void (*)()> kGroups[] = {
    {"gemms", gemms},
    {"strided_gemm", strided_gemm},
    {"linear", linear},
    {"norms", norms},
    {"activations", activations},
    {"cross_entropy", cross_entropy},
    {"adamw", adamw},
    {"rope", rope},
    {"embeddings", embeddings},
    {"attention", attention},
    {"attention_dropout", attention_dropout},
    {"t5_bias", t5_bias},
    {"lion", lion},
    {"adafactor_full", adafactor_full},
    {"adafactor_factored", adafactor_factored},
    {"adafactor_scales", adafactor_scales},
    {"bf16_conversions", bf16_conversions},
    {"clipping_and_residual", clipping_and_residual},
    {"dropouts", dropouts},
    {"bias_backward", bias_backward},
    {"qk_norm", qk_norm},
    {"attention_decode", attention_decode},
    {"attention_paged", attention_paged},
    {"linear_decode", linear_decode},
    {"attention_act", attention_act},
    {"vocab_parallel_loss", vocab_parallel_loss},
    {"kv_store", kv_store},
    {"positions", positions},
    {"elementwise_and_sums", elementwise_and_sums},
    {"vq_codebook", vq_codebook},
    {"vq_attention", vq_attention},
};

}  // namespace

int main(int argc, char** argv) {
    meshlm::set_thread_count(2);
    int ran = 0;
    for (const auto& [name, group] : kGroups) {
        bool wanted = argc == 1;
        for (int a = 1; a < argc; ++a) wanted = wanted || std::strcmp(argv[a], name) == 0;
        if (!wanted) continue;
        const auto t0 = std::chrono::steady_clock::now();
        group(), ++ran;
        const std::chrono::duration<double> took = std::chrono::steady_clock::now() - t0;
        std::printf("== %s: %.1f s\n", name, took.count());  // what the emulation costs
    }
    if (ran == 0) ++g_failures, std::printf("FAIL no group named on the command line\n");
    std::printf("%d failed\n", g_failures);
    return g_failures == 0 ? 0 : 1;
}
