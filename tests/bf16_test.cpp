// bf16 precision (train.precision: bf16). The conversion rounds to nearest, ties to even (against
// an independent nearest-value search in double); the bf16 GEMM equals a double-precision product
// of the rounded operands within fp32's summation error, for every transpose, alpha, beta and
// row stride; a bf16 linear (the vocabulary head's column chunks included) equals the fp32 linear
// run on rounded operands; and a tiny model's bf16 loss and gradients stay within a stated bound
// of fp32's for each family, with recomputation still bitwise.
// The suite runs twice (tests/CMakeLists.txt): on this CPU's path, and with
// MESHLM_NO_NATIVE_BF16=1, the widened-fp32 path every CPU has.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "meshlm/core/buffer.h"
#include "meshlm/core/rng.h"
#include "meshlm/core/threads.h"
#include "meshlm/kernels/kernels.h"
#include "meshlm/model/linear.h"
#include "meshlm/model/transformer.h"
#include "meshlm/model/transformer_layout.h"
#include "test_util.h"

namespace meshlm {
namespace {
namespace k = kernels;

float from16(std::uint16_t b) {
    const std::uint32_t u = static_cast<std::uint32_t>(b) << 16;
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
}

// The nearest bf16 by search: the two bf16 values around x (truncation and the next one up in
// magnitude), whichever is closer in double; on a tie the one with an even last bit.
std::uint16_t nearest_bf16(float x) {
    std::uint32_t u;
    std::memcpy(&u, &x, sizeof u);
    const std::uint16_t lo = static_cast<std::uint16_t>(u >> 16), hi = lo + 1;
    const double dlo = std::abs(static_cast<double>(x) - from16(lo));
    const double dhi = std::abs(static_cast<double>(x) - from16(hi));
    if (dlo != dhi) return dlo < dhi ? lo : hi;
    return (lo & 1) ? hi : lo;
}

std::vector<float> random_floats(std::size_t n, std::uint64_t seed, float scale = 1.f) {
    Philox rng(seed, 0);
    std::vector<float> v(n);
    for (float& x : v) x = scale * rng.normal();
    return v;
}

std::vector<std::uint16_t> rounded(const std::vector<float>& x) {
    std::vector<std::uint16_t> out(x.size());
    k::to_bf16(out.data(), x.data(), x.size());
    return out;
}

TEST(Bf16, PathMatchesTheEnvironment) {
    // The second run of this suite must take the widened path, or it tests nothing new.
    const char* off = std::getenv("MESHLM_NO_NATIVE_BF16");
    if (off && *off && *off != '0') EXPECT_FALSE(k::native_bf16());
    std::printf("native bf16: %s\n", k::native_bf16() ? "yes" : "no");
}

TEST(Bf16, RoundsToNearestTiesToEven) {
    std::vector<float> x = random_floats(100000, 3);
    // Exact ties and their neighbours: 1 + 2^-8 lies halfway between 1 and 1 + 2^-7 (bases are
    // powers of two, so every (2m + 1) 2^-8 is a tie at its exponent).
    for (float base : {1.f, -4.f, 0.125f, std::ldexp(1.f, -70), std::ldexp(-1.f, 100)})
        for (int m = 0; m < 4; ++m) {
            const float tie = base * (1.f + (2 * m + 1) * std::ldexp(1.f, -8));
            x.push_back(tie);
            x.push_back(std::nextafter(tie, 0.f));
            x.push_back(std::nextafter(tie, 2 * tie));
        }
    x.push_back(0.f), x.push_back(-0.f), x.push_back(INFINITY), x.push_back(-INFINITY);
    const std::vector<std::uint16_t> got = rounded(x);
    int ties = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        const std::uint16_t want = std::isinf(x[i]) ? static_cast<std::uint16_t>([&] {
            std::uint32_t u;
            std::memcpy(&u, &x[i], 4);
            return u >> 16;
        }())
                                                    : nearest_bf16(x[i]);
        ASSERT_EQ(got[i], want) << "x = " << x[i] << " (element " << i << ")";
        std::uint32_t u;
        std::memcpy(&u, &x[i], 4);
        ties += (u & 0xFFFF) == 0x8000;
    }
    EXPECT_GE(ties, 20);  // the tie cases were really ties
    // Widening is exact: every bf16 comes back as the float it stands for.
    std::vector<float> back(got.size());
    k::from_bf16(back.data(), got.data(), got.size());
    for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(back[i], from16(got[i]));
    // Rounding in fp32 gives the same values.
    std::vector<float> r(x.size());
    k::round_bf16(r.data(), x.data(), x.size());
    for (std::size_t i = 0; i < x.size(); ++i) ASSERT_EQ(r[i], from16(got[i])) << x[i];
    // The strided form rounds the same values.
    const int rows = 7, cols = 5, ld = 9;
    std::vector<std::uint16_t> dense(rows * cols);
    k::to_bf16_rows(dense.data(), x.data(), rows, cols, ld);
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c)
            ASSERT_EQ(dense[r * cols + c], got[static_cast<std::size_t>(r) * ld + c]);
}

// C = alpha op(A) op(B) + beta C0 against double sums of the rounded operands; the bound is
// fp32's recursive-summation error, K * 2^-24 * sum |a b|, plus C's own rounding.
void check_gemm(bool ta, bool tb, int M, int N, int K, float alpha, float beta, int pad) {
    const int lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad, ldc = N + pad;
    const std::vector<float> A = random_floats(static_cast<std::size_t>(ta ? K : M) * lda, 1);
    const std::vector<float> B = random_floats(static_cast<std::size_t>(tb ? N : K) * ldb, 2);
    const std::vector<float> C0 = random_floats(static_cast<std::size_t>(M) * ldc, 4);
    const std::vector<std::uint16_t> A16 = rounded(A), B16 = rounded(B);
    std::vector<float> C = C0;
    k::gemm_bf16(ta, tb, M, N, K, alpha, A16.data(), lda, B16.data(), ldb, beta, C.data(), ldc);
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
            double sum = 0, mag = 0;
            for (int p = 0; p < K; ++p) {
                const double a = from16(A16[ta ? static_cast<std::size_t>(p) * lda + i
                                               : static_cast<std::size_t>(i) * lda + p]);
                const double b = from16(B16[tb ? static_cast<std::size_t>(j) * ldb + p
                                               : static_cast<std::size_t>(p) * ldb + j]);
                sum += a * b, mag += std::abs(a * b);
            }
            const double c0 = C0[static_cast<std::size_t>(i) * ldc + j];
            const double want = alpha * sum + beta * c0;
            const double bound =
                (K + 2) * std::ldexp(1.0, -24) * (std::abs(alpha) * mag + std::abs(beta * c0));
            ASSERT_NEAR(C[static_cast<std::size_t>(i) * ldc + j], want, bound)
                << "ta " << ta << " tb " << tb << " M " << M << " N " << N << " K " << K << " at ("
                << i << ", " << j << ")";
        }
    // Padding columns of C are never written.
    for (int i = 0; i < M; ++i)
        for (int j = N; j < ldc; ++j)
            ASSERT_EQ(C[static_cast<std::size_t>(i) * ldc + j],
                      C0[static_cast<std::size_t>(i) * ldc + j]);
}

// ZeRO-3 receives the embeddings as bf16 in the first half of their fp32 buffer and widens them
// in place, in parallel passes: every value must come out as the float it stands for, for sizes
// around the passes' parallel threshold and odd ones.
TEST(Bf16, WidensInPlace) {
    set_thread_count(2);
    for (std::size_t n : {0, 1, 2, 3, 8, 4095, 8193, 8194, 100001}) {
        std::vector<std::uint16_t> in(n);
        Philox rng(n, 1);
        for (auto& h : in) h = static_cast<std::uint16_t>(rng.below(65536));
        std::vector<float> buf(n + 1, -1.f);
        if (n > 0) std::memcpy(buf.data(), in.data(), 2 * n);  // (in.data() is null for n = 0)
        k::from_bf16_in_place(buf.data(), n);
        for (std::size_t i = 0; i < n; ++i) {
            std::uint32_t got;
            std::memcpy(&got, &buf[i], 4);
            ASSERT_EQ(got, static_cast<std::uint32_t>(in[i]) << 16) << n << " " << i;
        }
        EXPECT_EQ(buf[n], -1.f) << n << ": wrote past the end";
    }
}

TEST(Bf16Gemm, MatchesDoubleProductsOfTheRoundedOperands) {
    for (bool ta : {false, true})
        for (bool tb : {false, true}) {
            check_gemm(ta, tb, 37, 29, 70, 1.f, 0.f, 0);
            check_gemm(ta, tb, 64, 48, 96, 1.f, 1.f, 3);
            check_gemm(ta, tb, 5, 130, 33, 0.5f, -2.f, 1);
        }
}

// The same linear in bf16 and in fp32 on operands rounded beforehand agree to fp32 summation
// order; with max_out below O, the output goes through in column chunks (the vocabulary head).
TEST(Bf16Linear, EqualsFp32OnRoundedOperandsInChunks) {
    const int N = 24, I = 40, O = 70;
    auto round_trip = [](std::vector<float> v) {
        std::vector<std::uint16_t> r = rounded(v);
        k::from_bf16(v.data(), r.data(), r.size());
        return v;
    };
    const std::vector<float> x = random_floats(N * I, 5), W = random_floats(O * I, 6, 0.1f),
                             b = random_floats(O, 7), dy = random_floats(N * O, 8);
    for (int max_out : {O, 32, 7}) {
        std::vector<std::uint16_t> xs(N * I), ws(max_out * I), dys(N * max_out);
        Bf16Scratch s;
        s.x = xs.data(), s.w = ws.data(), s.dy = dys.data();
        s.rows = N, s.max_in = I, s.max_out = max_out;
        std::vector<float> y(N * O), y_ref(N * O);
        linear::forward(Device::cpu, y.data(), x.data(), W.data(), b.data(), N, I, O, false, &s);
        const std::vector<float> xr = round_trip(x), Wr = round_trip(W), dyr = round_trip(dy);
        linear::forward(Device::cpu, y_ref.data(), xr.data(), Wr.data(), b.data(), N, I, O);
        for (int i = 0; i < N * O; ++i) ASSERT_NEAR(y[i], y_ref[i], 1e-5f) << max_out;

        std::vector<float> dx(N * I, 1.f), dW(O * I, 0.5f), db(O, 0.25f);
        std::vector<float> dx_ref = dx, dW_ref = dW, db_ref = db;
        linear::backward(Device::cpu, dx.data(), dW.data(), db.data(), dy.data(), x.data(),
                         W.data(), N, I, O, true, &s);
        linear::backward(Device::cpu, dx_ref.data(), dW_ref.data(), db_ref.data(), dyr.data(),
                         xr.data(), Wr.data(), N, I, O, true);
        for (int i = 0; i < N * I; ++i) ASSERT_NEAR(dx[i], dx_ref[i], 1e-5f) << max_out;
        for (int i = 0; i < O * I; ++i) ASSERT_NEAR(dW[i], dW_ref[i], 2e-5f) << max_out;
        // The bias gradient is summed from the fp32 dy.
        std::vector<float> db_fp32(O, 0.25f);
        k::bias_backward(db_fp32.data(), dy.data(), N, O);
        for (int o = 0; o < O; ++o) ASSERT_EQ(db[o], db_fp32[o]);
    }
}

struct Family {
    std::string name;
    ModelConfig cfg;
};

std::vector<Family> families() {
    ModelConfig gpt2;  // layernorm, learned positions, biases, GELU, tied head
    gpt2.n_layer = 3, gpt2.d_model = 48, gpt2.n_head = 3, gpt2.vocab_size = 61,
    gpt2.max_seq_len = 32;
    ModelConfig llama = gpt2;  // RMSNorm, rotary, GQA, SwiGLU, no biases, untied head
    llama.norm = "rmsnorm", llama.norm_bias = false, llama.position = "rope";
    llama.n_head = 4, llama.n_kv_head = 2, llama.d_model = 64, llama.mlp = "swiglu",
    llama.d_ff = 96;
    llama.qkv_bias = llama.proj_bias = llama.mlp_bias = false, llama.tied_head = false;
    ModelConfig gptj = gpt2;  // parallel block, partial interleaved rotary, dropout
    gptj.block = "parallel", gptj.position = "rope", gptj.rope_dim = 8,
    gptj.rope_style = "interleaved", gptj.n_head = 4, gptj.d_model = 64;
    gptj.dropout_attn = gptj.dropout_resid = 0.1f;
    return {{"gpt2", gpt2}, {"llama", llama}, {"gptj", gptj}};
}

using Result = test::ModelStep;

Result run(const ModelConfig& cfg, Precision p, Recompute r = Recompute::none) {
    return test::model_step(cfg, 2, 32, r, p);
}

// bf16 keeps 8 significant bits: each rounded operand is off by at most 2^-9 relative, a
// product of two by 2^-8. The bound allows that error to grow tenfold through the three blocks,
// the head and the backward: loss within 0.5 %, each gradient tensor within 3 % (relative L2).
TEST(Bf16Model, LossAndGradientsWithinBoundOfFp32) {
    for (const Family& f : families()) {
        const Result ref = run(f.cfg, Precision::fp32), got = run(f.cfg, Precision::bf16);
        EXPECT_NEAR(got.loss, ref.loss, 5e-3 * ref.loss) << f.name;
        EXPECT_NE(got.loss, ref.loss) << f.name << ": bf16 changed nothing";
        const ParamLayout layout = transformer_layout(f.cfg);
        double worst = 0;
        for (const ParamSlice& s : layout.slices()) {
            double diff = 0, norm = 0;
            for (std::size_t i = s.offset; i < s.offset + s.numel; ++i) {
                diff += (got.grads[i] - ref.grads[i]) * double(got.grads[i] - ref.grads[i]);
                norm += ref.grads[i] * double(ref.grads[i]);
            }
            if (norm == 0) continue;
            const double rel = std::sqrt(diff / norm);
            worst = std::max(worst, rel);
            EXPECT_LE(rel, 0.03) << f.name << " " << s.name;
        }
        std::printf("%s: loss fp32 %.6f bf16 %.6f; worst gradient relative L2 error %.2e\n",
                    f.name.c_str(), ref.loss, got.loss, worst);
    }
}

TEST(Bf16Model, RecomputationStaysBitwise) {
    for (const Family& f : families()) {
        const Result none = run(f.cfg, Precision::bf16);
        for (Recompute r : {Recompute::attention, Recompute::block}) {
            const Result got = run(f.cfg, Precision::bf16, r);
            EXPECT_EQ(got.loss, none.loss) << f.name << " " << recompute_name(r);
            EXPECT_EQ(got.grads, none.grads) << f.name << " " << recompute_name(r);
        }
    }
}

// bf16 computes with bf16 copies of every weight -- the blocks', the embeddings', ln_f's and the
// head's -- which is what lets ZeRO-3 gather all of them in bf16: parameters rounded to bf16
// beforehand give the same loss and gradients, bit for bit.
TEST(Bf16Model, ComputesWithBf16CopiesOfEveryWeight) {
    std::vector<Family> all = families();
    ModelConfig head_bias = all[0].cfg;  // learned positions, untied head with a bias
    head_bias.tied_head = false, head_bias.head_bias = true;
    all.push_back({"gpt2_head_bias", head_bias});
    // Every parameter drawn anew (biases and gains are 0 and 1 at init, which bf16 keeps).
    auto randomized = [](bool rounded) {
        return [rounded](float* p, std::size_t n) {
            Philox rng(21, 0);
            for (std::size_t i = 0; i < n; ++i) p[i] = 0.2f * rng.normal();
            if (rounded) k::round_bf16(p, p, n);
        };
    };
    for (const Family& f : all) {
        const Result raw =
            test::model_step(f.cfg, 2, 32, Recompute::none, Precision::bf16, randomized(false));
        const Result pre =
            test::model_step(f.cfg, 2, 32, Recompute::none, Precision::bf16, randomized(true));
        EXPECT_EQ(pre.loss, raw.loss) << f.name;
        EXPECT_EQ(pre.grads, raw.grads) << f.name;
        const Result fp32 =
            test::model_step(f.cfg, 2, 32, Recompute::none, Precision::fp32, randomized(true));
        EXPECT_NE(fp32.grads, raw.grads) << f.name << ": the comparison cannot tell fp32 from bf16";
    }
}

// bf16 keeps the linears' inputs in bf16: less activation memory than fp32, counted exactly.
TEST(Bf16Model, PlansLessActivationMemory) {
    for (const Family& f : families()) {
        const std::size_t fp32 = transformer_activation_floats(f.cfg, 8, 32),
                          bf16 = transformer_activation_floats(f.cfg, 8, 32, 1, Recompute::none,
                                                               Precision::bf16);
        EXPECT_LT(bf16, fp32) << f.name;
        Transformer model(f.cfg, 8, 32, nullptr, Recompute::none, Precision::bf16);
        EXPECT_EQ(model.activation_bytes(), bf16 * sizeof(float)) << f.name;
    }
}

}  // namespace
}  // namespace meshlm
