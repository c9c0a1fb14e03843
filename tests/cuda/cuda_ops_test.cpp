// The CUDA backend against the CPU, op by op, through the same view ops (kernels/ops/): each test
// body builds its inputs from seeds, runs on a device and returns its outputs; it runs once on
// Device::cpu and once on Device::cuda, and every output is compared with a tolerance chosen
// per op and dtype (the two backends sum in different orders and use different exp / tanh, so
// they agree closely, not bitwise). Tests skip, with the runtime's reason, where no GPU is
// present; NoDevice then checks that CUDA requests fail cleanly instead.
#include <gtest/gtest.h>

#include <algorithm>
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

#include "kernel_check.h"
#include "meshlm/core/error.h"
#include "meshlm/core/trace.h"
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
#include "meshlm/kernels/ops/elementwise.h"
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
#include "meshlm/kernels/ops/stats.h"
#include "meshlm/kernels/ops/vocab_parallel.h"
#include "meshlm/kernels/ops/vq_attention.h"

namespace meshlm {
namespace {

using kernels::DeviceBuffer;
using test::expect_error;
using test::randn;
using test::Tolerance;

// --- Moving data -------------------------------------------------------------------------------

template <typename T>
DType dtype_of() {
    if constexpr (std::is_same_v<T, float>) return DType::f32;
    if constexpr (std::is_same_v<T, std::int32_t>) return DType::i32;
    return DType::bf16;  // std::uint16_t: bf16 bits
}

// Set while compare_devices re-runs a body on the CPU to measure its outputs' conditioning: then
// every float input uploaded to the CPU is moved by up to one unit in the last place.
std::mt19937* g_input_noise = nullptr;

template <typename T>
DeviceBuffer upload(Device d, const std::vector<T>& v, Shape s) {
    DeviceBuffer b(d, dtype_of<T>(), s);
    std::vector<T> copy = v;
    if constexpr (std::is_same_v<T, float>)
        if (g_input_noise && d == Device::cpu) {
            std::uniform_real_distribution<float> ulps(-1.f, 1.f);
            for (float& x : copy) x *= 1.f + ulps(*g_input_noise) * 0x1p-23f;
        }
    kernels::copy(b.view(), Tensor{copy.data(), dtype_of<T>(), s, Device::cpu});
    return b;
}

std::vector<float> download(const DeviceBuffer& b) {
    std::vector<float> v(b.view().numel());
    kernels::copy(Tensor{v.data(), DType::f32, b.view().shape, Device::cpu}, b.view());
    return v;
}

// --- Running one body on both devices -----------------------------------------------------------

using Outputs = std::vector<std::pair<std::string, std::vector<float>>>;

// How far each CPU output moves when every float input moves by up to 1 ulp: the largest change
// over kNoiseRuns seeded runs, per element, one vector per output.
constexpr int kNoiseRuns = 8;
std::vector<std::vector<double>> rounding_spread(const std::function<Outputs(Device)>& body,
                                                 const Outputs& cpu) {
    std::vector<std::vector<double>> spread;
    for (const auto& o : cpu) spread.emplace_back(o.second.size(), 0.0);
    std::mt19937 rng(20261127);
    g_input_noise = &rng;
    for (int run = 0; run < kNoiseRuns; ++run) {
        const Outputs moved = body(Device::cpu);
        for (std::size_t k = 0; k < cpu.size(); ++k)
            for (std::size_t i = 0; i < spread[k].size(); ++i)
                spread[k][i] = std::max(spread[k][i],
                                        std::fabs(double(moved[k].second[i]) - cpu[k].second[i]));
    }
    g_input_noise = nullptr;
    return spread;
}

// Runs body on both devices and compares each output. conditioned: an element may also differ
// by kSpreadFactor times how far 1-ulp input noise moves the CPU's own result there, for ops
// whose gradients subtract nearly equal sums (dS = P (dP - dO.out) and the like): there the
// GPU's other summation orders and expf (each worth a few ulp of the inputs) move the result
// by more than any fixed relative tolerance of it, the CPU's as much (measured on an H200:
// GPU-CPU differences of 0.09 to 5.1 times the 8-run spread where a fixed tolerance failed).
constexpr double kSpreadFactor = 16;
void compare_devices(const std::string& what, const std::function<Outputs(Device)>& body,
                     Tolerance tol, bool conditioned = false) {
    const Outputs cpu = body(Device::cpu), gpu = body(Device::cuda);
    ASSERT_EQ(cpu.size(), gpu.size());
    std::vector<std::vector<double>> spread;
    if (conditioned) spread = rounding_spread(body, cpu);
    for (std::size_t k = 0; k < cpu.size(); ++k) {
        std::vector<double> slack;
        if (conditioned) {
            for (double s : spread[k]) slack.push_back(kSpreadFactor * s);
            std::printf("[ spread   ] %-40s largest 1-ulp-noise change %.2e\n",
                        (what + " " + cpu[k].first).c_str(),
                        *std::max_element(spread[k].begin(), spread[k].end()));
        }
        test::expect_close(what + " " + cpu[k].first, gpu[k].second, test::to_double(cpu[k].second),
                           tol, slack);
    }
}

class CudaOps : public ::testing::Test {
  protected:
    void SetUp() override {
        if (kernels::cuda_device_count() == 0)
            GTEST_SKIP() << "no GPU here: " << kernels::cuda_unavailable_reason();
    }
};

// --- GEMM, per dtype ----------------------------------------------------------------------------

struct GemmCase {
    DType dtype;
    Tolerance tol;
};

class CudaGemm : public CudaOps, public ::testing::WithParamInterface<GemmCase> {};

TEST_P(CudaGemm, MatchesCpu) {
    const DType dtype = GetParam().dtype;
    const Tolerance tol = GetParam().tol;
    const int M = 67, N = 45, K = 130;
    for (bool ta : {false, true})
        for (bool tb : {false, true}) {
            const Shape sa = ta ? Shape{K, M} : Shape{M, K}, sb = tb ? Shape{N, K} : Shape{K, N};
            compare_devices(
                std::string("gemm ") + dtype_name(dtype) + (ta ? " A^T" : " A") +
                    (tb ? " B^T" : " B"),
                [&](Device d) {
                    auto a = randn(M * K, 1), b = randn(K * N, 2), c = randn(M * N, 3);
                    DeviceBuffer C = upload(d, c, {M, N});
                    if (dtype == DType::bf16) {
                        std::vector<std::uint16_t> a16(a.size()), b16(b.size());
                        kernels::to_bf16(a16.data(), a.data(), a.size());
                        kernels::to_bf16(b16.data(), b.data(), b.size());
                        DeviceBuffer A = upload(d, a16, sa), B = upload(d, b16, sb);
                        ops::gemm(C.view(), A.view(), ta, B.view(), tb, 0.5f, 0.25f);
                    } else {
                        DeviceBuffer A = upload(d, a, sa), B = upload(d, b, sb);
                        ops::gemm(C.view(), A.view(), ta, B.view(), tb, 0.5f, 0.25f);
                    }
                    return Outputs{{"C", download(C)}};
                },
                tol);
        }
}

// bf16 operands are the same bf16 values on both devices and their products are exact in fp32,
// so the tolerance only covers summation order (and a split-K cuBLASLt algorithm), as for fp32.
INSTANTIATE_TEST_SUITE_P(Dtypes, CudaGemm,
                         ::testing::Values(GemmCase{DType::f32, {1e-4, 1e-4}},
                                           GemmCase{DType::bf16, {2e-4, 2e-4}}),
                         [](const auto& info) {
                             return std::string(dtype_name(info.param.dtype));
                         });

// Row strides reach cuBLASLt: C and A as column blocks of wider rows (the model's chunked bf16
// head), the columns outside the blocks untouched.
TEST_F(CudaOps, GemmOnColumnBlocks) {
    const int M = 33, N = 20, K = 40, WC = 50, WA = 48;
    compare_devices("gemm column blocks",
                    [&](Device d) {
                        DeviceBuffer C = upload(d, randn(M * WC, 50), {M, WC});
                        DeviceBuffer A = upload(d, randn(M * WA, 51), {M, WA});
                        DeviceBuffer B = upload(d, randn(N * K, 52), {N, K});
                        ops::gemm(C.view().columns(10, N), A.view().columns(5, K), false, B.view(),
                                  true, 1.f, 1.f);
                        return Outputs{{"C", download(C)}};
                    },
                    {1e-4, 1e-4});
}

// --- Linear -------------------------------------------------------------------------------------

TEST_F(CudaOps, LinearAndAddBias) {
    const int N = 37, I = 70, O = 45;
    compare_devices("linear",
                    [&](Device d) {
                        DeviceBuffer x = upload(d, randn(N * I, 53), {N, I});
                        DeviceBuffer W = upload(d, randn(O * I, 54), {O, I});
                        DeviceBuffer b = upload(d, randn(O, 55), {O});
                        DeviceBuffer y(d, DType::f32, {N, O}), y0(d, DType::f32, {N, O});
                        ops::linear_forward(y.view(), x.view(), W.view(), b.view());
                        ops::linear_forward(y0.view(), x.view(), W.view(), Tensor{});
                        DeviceBuffer z = upload(d, randn(N * O, 56), {N, O});
                        ops::add_bias(z.view(), b.view());
                        DeviceBuffer dy = upload(d, randn(N * O, 57), {N, O});
                        DeviceBuffer dx(d, DType::f32, {N, I});
                        DeviceBuffer dW = upload(d, test::accumulate_pattern(O * I), {O, I});
                        DeviceBuffer db = upload(d, test::accumulate_pattern(O), {O});
                        ops::linear_backward(dx.view(), dW.view(), db.view(), dy.view(), x.view(),
                                             W.view());
                        return Outputs{{"y", download(y)},     {"y without b", download(y0)},
                                       {"y + b", download(z)}, {"dx", download(dx)},
                                       {"dW", download(dW)},   {"db", download(db)}};
                    },
                    {1e-4, 1e-4});
}

// --- Norms --------------------------------------------------------------------------------------

TEST_F(CudaOps, LayerNorm) {
    const int N = 37, C = 200;
    compare_devices("layernorm",
                    [&](Device d) {
                        DeviceBuffer x = upload(d, randn(N * C, 4, 2.f, 0.5f), {N, C});
                        DeviceBuffer w = upload(d, randn(C, 5, 0.5f, 1.f), {C}),
                                     b = upload(d, randn(C, 6), {C});
                        DeviceBuffer out(d, DType::f32, {N, C}), mean(d, DType::f32, {N}),
                            rstd(d, DType::f32, {N});
                        ops::layernorm_forward(out.view(), mean.view(), rstd.view(), x.view(),
                                               w.view(), b.view(), 1e-5f);
                        DeviceBuffer dx = upload(d, test::accumulate_pattern(N * C), {N, C});
                        DeviceBuffer dw = upload(d, test::accumulate_pattern(C), {C});
                        DeviceBuffer db = upload(d, test::accumulate_pattern(C), {C});
                        DeviceBuffer dout = upload(d, randn(N * C, 7), {N, C});
                        ops::layernorm_backward(dx.view(), dw.view(), db.view(), dout.view(),
                                                x.view(), w.view(), mean.view(), rstd.view());
                        return Outputs{{"out", download(out)},   {"mean", download(mean)},
                                       {"rstd", download(rstd)}, {"dx", download(dx)},
                                       {"dw", download(dw)},     {"db", download(db)}};
                    },
                    {1e-5, 1e-4});
}

TEST_F(CudaOps, RmsNormWithoutBias) {
    const int N = 29, C = 333;
    compare_devices("rmsnorm",
                    [&](Device d) {
                        DeviceBuffer x = upload(d, randn(N * C, 8), {N, C});
                        DeviceBuffer w = upload(d, randn(C, 9, 0.5f, 1.f), {C});
                        DeviceBuffer out(d, DType::f32, {N, C}), rstd(d, DType::f32, {N});
                        ops::rmsnorm_forward(out.view(), rstd.view(), x.view(), w.view(), Tensor{},
                                             1e-6f);
                        DeviceBuffer dx = upload(d, test::accumulate_pattern(N * C), {N, C});
                        DeviceBuffer dw = upload(d, test::accumulate_pattern(C), {C});
                        DeviceBuffer dout = upload(d, randn(N * C, 10), {N, C});
                        ops::rmsnorm_backward(dx.view(), dw.view(), Tensor{}, dout.view(), x.view(),
                                              w.view(), rstd.view());
                        return Outputs{{"out", download(out)},
                                       {"rstd", download(rstd)},
                                       {"dx", download(dx)},
                                       {"dw", download(dw)}};
                    },
                    {1e-5, 1e-4});
}

// --- Activations --------------------------------------------------------------------------------

TEST_F(CudaOps, ActivationsAndGlu) {
    const int N = 13, F = 77;
    const std::pair<kernels::Act, const char*> acts[] = {{kernels::Act::gelu_tanh, "gelu_tanh"},
                                                         {kernels::Act::gelu, "gelu"},
                                                         {kernels::Act::relu, "relu"},
                                                         {kernels::Act::sqrelu, "sqrelu"},
                                                         {kernels::Act::silu, "silu"}};
    for (const auto& [act, name] : acts)
        compare_devices(
            name,
            [&](Device d) {
                DeviceBuffer h = upload(d, randn(N * 2 * F, 11, 3.f), {N, 2 * F});
                DeviceBuffer g2 = upload(d, randn(N * 2 * F, 12), {N, 2 * F});
                DeviceBuffer g1 = upload(d, randn(N * F, 13), {N, F});
                DeviceBuffer y(d, DType::f32, {N, 2 * F}), dy(d, DType::f32, {N, 2 * F});
                ops::activation_forward(act, y.view(), h.view());
                ops::activation_backward(act, dy.view(), h.view(), g2.view());
                DeviceBuffer o(d, DType::f32, {N, F}), dh(d, DType::f32, {N, 2 * F});
                ops::glu_forward(act, o.view(), h.view());
                ops::glu_backward(act, dh.view(), h.view(), g1.view());
                return Outputs{{"act", download(y)},
                               {"act'", download(dy)},
                               {"glu", download(o)},
                               {"glu'", download(dh)}};
            },
            {2e-6, 2e-5});
}

// --- Loss and optimizer -------------------------------------------------------------------------

TEST_F(CudaOps, CrossEntropyLossAndGradient) {
    const int N = 11, V = 5003;
    std::vector<std::int32_t> targets(N);
    for (int n = 0; n < N; ++n) targets[n] = n == 5 ? -1 : (n * 977) % V;
    for (float z : {0.f, 1e-4f})
        compare_devices(z == 0.f ? "cross_entropy" : "cross_entropy z-loss",
                        [&](Device d) {
                            DeviceBuffer logits = upload(d, randn(N * V, 14, 4.f), {N, V});
                            DeviceBuffer t = upload(d, targets, {N});
                            DeviceBuffer loss(d, DType::f32, {N});
                            ops::softmax_cross_entropy(logits.view(), loss.view(), t.view(),
                                                       1.f / N, z);
                            return Outputs{{"loss", download(loss)}, {"dlogits", download(logits)}};
                        },
                        {1e-6, 1e-4});
}

TEST_F(CudaOps, AdamW) {
    const int n = 10007;
    compare_devices("adamw",
                    [&](Device d) {
                        auto v0 = randn(n, 18, 0.1f);
                        for (auto& v : v0) v = std::fabs(v);
                        DeviceBuffer p = upload(d, randn(n, 15), {n}),
                                     g = upload(d, randn(n, 16), {n});
                        DeviceBuffer m = upload(d, randn(n, 17, 0.1f), {n}), v = upload(d, v0, {n});
                        for (long step = 1; step <= 3; ++step)
                            ops::adamw(p.view(), g.view(), m.view(), v.view(),
                                       {.lr = 1e-3f,
                                        .beta1 = 0.9f,
                                        .beta2 = 0.95f,
                                        .eps = 1e-8f,
                                        .weight_decay = 0.1f,
                                        .step = step});
                        return Outputs{{"p", download(p)}, {"m", download(m)}, {"v", download(v)}};
                    },
                    {1e-6, 1e-5});
}

// --- Optimizer passes, clipping, bf16 conversions, residual -------------------------------------
// Bitwise where both backends do the same IEEE operations (conversions, clamp, scale, the
// residual add); the optimizer steps within an ulp or two, since GCC (-ffp-contract=fast) and
// nvcc (--fmad=true) may fuse different products into FMAs; the double sums within 1e-6
// relative (different summation orders), and bitwise the same from one GPU run to the next.

template <typename T>
std::vector<T> download_as(const DeviceBuffer& b) {
    std::vector<T> v(b.view().numel());
    kernels::copy(Tensor{v.data(), dtype_of<T>(), b.view().shape, Device::cpu}, b.view());
    return v;
}

// Bit for bit, except that with any_nan a NaN matches any NaN: arithmetic on a NaN gives the
// GPU's canonical NaN but x86's quieted operand.
template <typename T>
void expect_same_bits(const std::string& what, const std::vector<T>& got,
                      const std::vector<T>& want, bool any_nan = false) {
    ASSERT_EQ(got.size(), want.size()) << what;
    std::size_t diff = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
        if constexpr (std::is_same_v<T, float>)
            if (any_nan && std::isnan(got[i]) && std::isnan(want[i])) continue;
        if (std::memcmp(&got[i], &want[i], sizeof(T)) != 0 && ++diff <= 5)
            ADD_FAILURE() << what << "[" << i << "]: bits differ";
    }
    EXPECT_EQ(diff, 0u) << what;
    test::report(what + " (bits)", want.size(), 0, 0);
}

void expect_sum_close(const std::string& what, double got, double want, double rel) {
    EXPECT_LE(std::fabs(got - want), rel * std::fabs(want))
        << what << ": " << got << " vs " << want;
    test::report(what, 1, std::fabs(got - want), std::fabs(got - want) / (rel * std::fabs(want)));
}

// Two calls of run give bitwise the same sums.
void expect_repeats(const std::string& what, const std::function<std::vector<double>()>& run) {
    const auto a = run(), b = run();
    ASSERT_EQ(a.size(), b.size()) << what;
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(double)), 0)
        << what << " differs from run to run";
}

float bits_to_float(std::uint32_t u) {
    float x;
    std::memcpy(&x, &u, sizeof x);
    return x;
}

TEST_F(CudaOps, Lion) {
    const int n = 10007;
    compare_devices("lion",
                    [&](Device d) {
                        DeviceBuffer p = upload(d, randn(n, 30), {n}),
                                     g = upload(d, randn(n, 31), {n});
                        DeviceBuffer m = upload(d, randn(n, 32, 0.1f), {n});
                        for (int step = 0; step < 3; ++step)
                            ops::lion(p.view(), g.view(), m.view(),
                                      {.lr = 1e-3f,
                                       .beta1 = 0.9f,
                                       .beta2 = 0.99f,
                                       .weight_decay = 0.1f,
                                       .grad_scale = 0.5f});
                        return Outputs{{"p", download(p)}, {"m", download(m)}};
                    },
                    {1e-7, 1e-6});
}

TEST_F(CudaOps, AdafactorFullMoment) {
    const int n = 70001;
    double sums[2];
    compare_devices("adafactor moment",
                    [&](Device d) {
                        auto v0 = randn(n, 33, 0.1f);
                        for (auto& v : v0) v = std::fabs(v);
                        DeviceBuffer v = upload(d, v0, {n}), g = upload(d, randn(n, 34), {n});
                        DeviceBuffer p = upload(d, randn(n, 35), {n});
                        sums[d == Device::cuda] =
                            ops::adafactor_moment(v.view(), g.view(), 0.8f, 1e-30f);
                        ops::adafactor_apply(p.view(), g.view(), v.view(), 1e-2f, 0.999f);
                        return Outputs{{"v", download(v)}, {"p", download(p)}};
                    },
                    {1e-7, 1e-6});
    expect_sum_close("adafactor moment sum u^2", sums[1], sums[0], 1e-6);
}

// A run that starts and ends mid-row, crosses several 64-row column chunks and sits at
// (row0, col0) of a larger tensor.
TEST_F(CudaOps, AdafactorFactored) {
    const std::int64_t width = 301, R = 300, C = 320;
    const ops::AdafactorRun run{.first = 150, .width = width, .row0 = 7, .col0 = 11};
    const std::int64_t n = width * 250 + 77;
    std::vector<double> rows[2], cols[2];
    double sumsq[2];
    compare_devices(
        "adafactor factored",
        [&](Device d) {
            const int k = d == Device::cuda;
            DeviceBuffer g = upload(d, randn(n, 36), {n}), p = upload(d, randn(n, 37), {n});
            DeviceBuffer rs = upload(d, randn(R, 38, 0.3f, 1.f), {R});
            DeviceBuffer cs = upload(d, randn(C, 39, 0.3f, 1.f), {C});
            rows[k].assign(R, 0.5), cols[k].assign(C, 0.25);
            ops::adafactor_factored_sums(g.view(), run, 1e-30f, rows[k], cols[k]);
            sumsq[k] = ops::adafactor_factored_sumsq(g.view(), run, rs.view(), cs.view());
            ops::adafactor_factored_apply(p.view(), g.view(), run, rs.view(), cs.view(), 1e-2f,
                                          0.999f);
            return Outputs{{"p", download(p)}};
        },
        {1e-7, 1e-6});
    test::expect_close("adafactor factored row sums",
                       std::vector<float>(rows[1].begin(), rows[1].end()), rows[0], {0, 1e-6});
    test::expect_close("adafactor factored col sums",
                       std::vector<float>(cols[1].begin(), cols[1].end()), cols[0], {0, 1e-6});
    expect_sum_close("adafactor factored sum u^2", sumsq[1], sumsq[0], 1e-6);
}

// The statistics' decay and the update's factors, the means in the factors' buffer (as the
// optimizer calls it): rows shorter than the columns, longer, square. An ulp or two of FMA
// contraction per statistic; the means are double sums in other orders, rounded to float.
TEST_F(CudaOps, AdafactorFactoredScales) {
    for (const auto& [R, C] : {std::pair<int, int>{37, 1000}, {1000, 37}, {64, 64}})
        compare_devices(
            "adafactor scales " + std::to_string(R) + "x" + std::to_string(C),
            [&, R = R, C = C](Device d) {
                std::vector<float> st = randn(R + C, 43, 0.1f), mn = randn(R + C, 44, 0.1f);
                for (float& x : st) x = std::fabs(x) + 1e-3f;
                for (float& x : mn) x = std::fabs(x) + 1e-3f;
                DeviceBuffer stats = upload(d, st, {R + C}), scales = upload(d, mn, {R + C});
                ops::adafactor_factored_scales(stats.view(), scales.view(), scales.view(), R, 0.8f);
                return Outputs{{"stats", download(stats)}, {"scales", download(scales)}};
            },
            {0, 1e-6});
}

// The double sums repeat their bits: fixed grids, fixed-order trees, no float atomics.
TEST_F(CudaOps, OptimizerSumsAreDeterministic) {
    const std::int64_t n = 1 << 20, width = 1000;
    DeviceBuffer g = upload(Device::cuda, randn(n, 40), {n});
    DeviceBuffer rs = upload(Device::cuda, randn(n / width + 2, 41), {n / width + 2});
    DeviceBuffer cs = upload(Device::cuda, randn(width, 42), {width});
    const ops::AdafactorRun run{.first = 3, .width = width};
    expect_repeats("sum_squares", [&] { return std::vector<double>{ops::sum_squares(g.view())}; });
    expect_repeats("adafactor_factored_sumsq", [&] {
        return std::vector<double>{
            ops::adafactor_factored_sumsq(g.view(), run, rs.view(), cs.view())};
    });
    expect_repeats("adafactor_moment", [&] {
        DeviceBuffer v(Device::cuda, DType::f32, {n});
        return std::vector<double>{ops::adafactor_moment(v.view(), g.view(), 0.8f, 1e-30f)};
    });
    expect_repeats("adafactor_factored_sums", [&] {
        std::vector<double> s(n / width + 2 + width);
        ops::adafactor_factored_sums(g.view(), run, 1e-30f, std::span(s).first(n / width + 2),
                                     std::span(s).last(width));
        return s;
    });
}

TEST_F(CudaOps, ClippingAndResidual) {
    const int n = 100003;
    auto x = randn(n, 43, 2.f);
    for (std::uint32_t u : {0x7FC00000u, 0x7F800000u, 0xFF800000u, 0x80000000u, 0x00000001u})
        x[7 * (u % 97)] = bits_to_float(u);  // NaN, infinities, -0, a denormal
    const auto y = randn(n, 44);
    std::vector<float> clamped[2], sums[2];
    for (Device d : {Device::cpu, Device::cuda}) {
        const int k = d == Device::cuda;
        DeviceBuffer a = upload(d, x, {n}), b = upload(d, y, {n});
        ops::clamp(a.view(), 1.5f);
        clamped[k] = download(a);
        ops::scale(a.view(), 0.37f);
        ops::residual_forward(b.view(), a.view(), b.view());  // out = b, in place
        sums[k] = download(b);
    }
    expect_same_bits("clamp", clamped[1], clamped[0]);
    expect_same_bits("scale, residual_forward", sums[1], sums[0], true);
    const int N = 97, C = 1031;
    const auto o0 = randn(N * C, 46), r0 = randn(N * C, 47), b1 = randn(C, 48), b2 = randn(C, 49);
    for (int mask = 0; mask < 4; ++mask) {
        std::vector<float> got[2];
        for (Device d : {Device::cpu, Device::cuda}) {
            DeviceBuffer o = upload(d, o0, {N, C}), r = upload(d, r0, {N, C});
            DeviceBuffer p1 = upload(d, b1, {C}), p2 = upload(d, b2, {C});
            ops::bias_residual(o.view(), mask & 1 ? p1.view() : Tensor{},
                               mask & 2 ? p2.view() : Tensor{}, r.view());
            got[d == Device::cuda] = download(o);
        }
        expect_same_bits("bias_residual", got[1], got[0], true);
    }
    const auto z = randn(n, 45, 3.f);
    double s[2];
    for (Device d : {Device::cpu, Device::cuda})
        s[d == Device::cuda] = ops::sum_squares(upload(d, z, {n}).view());
    expect_sum_close("sum_squares", s[1], s[0], 1e-6);
}

// Rounding's edge cases (signed zeros, denormals, ties either way, the largest finite, which
// rounds to infinity, infinities, NaNs that round to infinity or carry into the sign), then every
// top half with low halves around a tie.
std::vector<float> bf16_cases() {
    std::vector<float> v;
    for (std::uint32_t u :
         {0x00000000u, 0x80000000u, 0x00000001u, 0x007FFFFFu, 0x807F8000u, 0x3F808000u, 0x3F818000u,
          0x3F80FFFFu, 0x7F7FFFFFu, 0x7F800000u, 0xFF800000u, 0x7FC00000u, 0x7F800001u, 0x7FFF8000u,
          0xFFFFFFFFu, 0xFFC00001u})
        v.push_back(bits_to_float(u));
    for (std::uint32_t hi = 0; hi < 65536; ++hi)
        for (std::uint32_t lo : {0x0000u, 0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu})
            v.push_back(bits_to_float(hi << 16 | lo));
    return v;
}

TEST_F(CudaOps, Bf16ConversionsAreBitwise) {
    const auto x = bf16_cases();
    const std::int64_t n = static_cast<std::int64_t>(x.size());
    std::vector<std::uint16_t> all(65536);
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<std::uint16_t>(i);
    const int rows = 300, cols = 150, ld = 211, col0 = 40;
    std::vector<std::uint16_t> h[2], hr[2];
    std::vector<float> r[2], w[2], wr[2], wp[2];
    for (Device d : {Device::cpu, Device::cuda}) {
        const int k = d == Device::cuda;
        DeviceBuffer in = upload(d, x, {n}), out16(d, DType::bf16, {n});
        ops::to_bf16(out16.view(), in.view());
        h[k] = download_as<std::uint16_t>(out16);
        DeviceBuffer rounded = upload(d, x, {n});
        ops::round_bf16(rounded.view(), rounded.view());  // in place
        r[k] = download(rounded);
        DeviceBuffer bits = upload(d, all, {65536}), wide(d, DType::f32, {65536});
        ops::from_bf16(wide.view(), bits.view());
        w[k] = download(wide);
        // Columns [col0, col0 + cols) of the first rows * ld values seen as [rows, ld].
        const Tensor x2{in.view().data, DType::f32, {rows, ld}, d};
        DeviceBuffer rows16(d, DType::bf16, {rows, cols}), rows32(d, DType::f32, {rows, cols});
        ops::to_bf16_rows(rows16.view(), x2, col0);
        hr[k] = download_as<std::uint16_t>(rows16);
        const Tensor bits2{bits.view().data, DType::bf16, {rows, ld}, d};
        ops::from_bf16_rows(rows32.view(), bits2, col0);
        wr[k] = download(rows32);
        // In place: the first 2 * 65536 bytes of a [65536] f32 buffer hold the bf16 values.
        DeviceBuffer buf(d, DType::f32, {65536});
        kernels::copy(Tensor{buf.view().data, DType::bf16, {65536}, d}, bits.view());
        ops::from_bf16_in_place(buf.view());
        wp[k] = download(buf);
    }
    expect_same_bits("to_bf16", h[1], h[0]);
    expect_same_bits("round_bf16", r[1], r[0]);
    expect_same_bits("from_bf16", w[1], w[0]);
    expect_same_bits("to_bf16_rows", hr[1], hr[0]);
    expect_same_bits("from_bf16_rows", wr[1], wr[0]);
    expect_same_bits("from_bf16_in_place", wp[1], wp[0]);
    expect_same_bits("from_bf16_in_place vs from_bf16", wp[1], w[0]);
}

// --- Positions and embeddings -------------------------------------------------------------------

TEST_F(CudaOps, Rope) {
    const int N = 24, T = 12, H = 3, Hkv = 1, D = 32, W = (H + 2 * Hkv) * D;
    for (bool interleaved : {false, true})
        for (int rope_dim : {D, 8})
            compare_devices(std::string("rope ") + (interleaved ? "interleaved " : "halves ") +
                                std::to_string(rope_dim),
                            [&](Device d) {
                                std::vector<float> inv(rope_dim / 2);
                                for (int i = 0; i < rope_dim / 2; ++i)
                                    inv[i] = std::pow(10000.f, -2.f * i / rope_dim);
                                DeviceBuffer x = upload(d, randn(N * W, 19), {N, W});
                                DeviceBuffer f = upload(d, inv, {rope_dim / 2});
                                const ops::RopeHeads q{.col0 = 0,
                                                       .heads = H,
                                                       .head_dim = D,
                                                       .rope_dim = rope_dim,
                                                       .interleaved = interleaved,
                                                       .T = T};
                                ops::RopeHeads k = q;
                                k.col0 = H * D, k.heads = Hkv;
                                ops::rope_forward(x.view(), Tensor{}, f.view(), q);
                                ops::rope_forward(x.view(), Tensor{}, f.view(), k);
                                auto fwd = download(x);
                                std::vector<std::int32_t> pos(N);
                                for (int n = 0; n < N; ++n) pos[n] = 1000 + 7 * n;
                                DeviceBuffer p = upload(d, pos, {N});
                                ops::rope_backward(x.view(), p.view(), f.view(), q);
                                return Outputs{{"forward", fwd}, {"backward", download(x)}};
                            },
                            {1e-6, 1e-5});
}

TEST_F(CudaOps, EmbeddingWithPositions) {
    const int N = 40, T = 10, V = 50, C = 300, P = 16;
    std::vector<std::int32_t> tok(N);
    for (int n = 0; n < N; ++n) tok[n] = (n * n) % V;  // repeats
    tok[7] = V + 3;                                    // outside the table: a zero row
    compare_devices("embedding",
                    [&](Device d) {
                        DeviceBuffer wte = upload(d, randn(V * C, 20), {V, C});
                        DeviceBuffer wpe = upload(d, randn(P * C, 21), {P, C});
                        DeviceBuffer t = upload(d, tok, {N});
                        DeviceBuffer out(d, DType::f32, {N, C});
                        ops::embedding_forward(out.view(), t.view(), wte.view(), wpe.view(), T);
                        DeviceBuffer dwte = upload(d, test::accumulate_pattern(V * C), {V, C});
                        DeviceBuffer dwpe = upload(d, test::accumulate_pattern(P * C), {P, C});
                        DeviceBuffer dout = upload(d, randn(N * C, 22), {N, C});
                        ops::embedding_backward(dwte.view(), dwpe.view(), dout.view(), t.view(), T);
                        return Outputs{{"out", download(out)},
                                       {"dwte", download(dwte)},
                                       {"dwpe", download(dwpe)}};
                    },
                    {1e-6, 1e-6});
}

// --- Attention ----------------------------------------------------------------------------------

struct AttnCase {
    int B, T, H, Hkv, D;
    bool alibi;
    float scale;
    float dropout = 0.f;  // on the probabilities, the CPU's Philox mask
};

void compare_attention(const AttnCase& c) {
    const int W = (c.H + 2 * c.Hkv) * c.D;
    const std::string what = "attention B" + std::to_string(c.B) + " T" + std::to_string(c.T) +
                             " H" + std::to_string(c.H) + "/" + std::to_string(c.Hkv) + " D" +
                             std::to_string(c.D) + (c.alibi ? " alibi" : "") +
                             (c.dropout > 0.f ? " dropout" : "");
    compare_devices(
        what,
        [&](Device d) {
            std::vector<float> slopes(c.H);
            for (int h = 0; h < c.H; ++h) slopes[h] = std::pow(2.f, -8.f * (h + 1) / c.H);
            DeviceBuffer qkv = upload(d, randn(std::size_t(c.B) * c.T * W, 23), {c.B, c.T, W});
            DeviceBuffer dout =
                upload(d, randn(std::size_t(c.B) * c.T * c.H * c.D, 24), {c.B, c.T, c.H * c.D});
            DeviceBuffer sl = upload(d, slopes, {c.H});
            const Tensor alibi = c.alibi ? sl.view() : Tensor{};
            // A later micro-batch's rows, a tensor-parallel rank's heads.
            const kernels::AttnDropout drop{.rate = c.dropout,
                                            .seed = 77,
                                            .stream = 5,
                                            .row0 = 3,
                                            .head0 = c.H,
                                            .n_head = 3 * c.H};
            const ops::AttentionHeads heads{
                .H = c.H, .Hkv = c.Hkv, .scale = c.scale, .dropout = &drop};
            DeviceBuffer out(d, DType::f32, {c.B, c.T, c.H * c.D}),
                lse(d, DType::f32, {c.B, c.H, c.T});
            ops::attention_forward(out.view(), lse.view(), qkv.view(), alibi, heads);
            DeviceBuffer dqkv(d, DType::f32, {c.B, c.T, W});
            ops::attention_backward(dqkv.view(), dout.view(), out.view(), lse.view(), qkv.view(),
                                    alibi, heads);
            return Outputs{
                {"out", download(out)}, {"lse", download(lse)}, {"dqkv", download(dqkv)}};
        },
        {2e-5, 2e-4});
}

TEST_F(CudaOps, AttentionMultiHead) {
    compare_attention({.B = 2, .T = 70, .H = 4, .Hkv = 4, .D = 64, .alibi = false, .scale = 0.f});
}

TEST_F(CudaOps, AttentionGroupedAlibiOddSizes) {
    compare_attention({.B = 1, .T = 97, .H = 6, .Hkv = 2, .D = 40, .alibi = true, .scale = 0.f});
    compare_attention({.B = 3, .T = 5, .H = 2, .Hkv = 1, .D = 8, .alibi = false, .scale = 0.125f});
}

TEST_F(CudaOps, AttentionWideHeads) {
    compare_attention({.B = 1, .T = 40, .H = 2, .Hkv = 2, .D = 256, .alibi = false, .scale = 0.f});
}

// The probabilities' dropout mask is integer Philox on both devices, regenerated by each pass.
TEST_F(CudaOps, AttentionDropout) {
    compare_attention({.B = 2,
                       .T = 70,
                       .H = 4,
                       .Hkv = 2,
                       .D = 64,
                       .alibi = false,
                       .scale = 0.f,
                       .dropout = 0.1f});
    compare_attention(
        {.B = 1, .T = 37, .H = 2, .Hkv = 1, .D = 40, .alibi = true, .scale = 0.f, .dropout = 0.5f});
}

// The backward sums without atomics: two runs give bitwise the same gradients.
TEST_F(CudaOps, AttentionBackwardIsDeterministic) {
    const int B = 2, T = 130, H = 4, Hkv = 2, D = 64, W = (H + 2 * Hkv) * D;
    DeviceBuffer qkv = upload(Device::cuda, randn(B * T * W, 25), {B, T, W});
    DeviceBuffer dout = upload(Device::cuda, randn(B * T * H * D, 26), {B, T, H * D});
    DeviceBuffer out(Device::cuda, DType::f32, {B, T, H * D}),
        lse(Device::cuda, DType::f32, {B, H, T});
    const ops::AttentionHeads heads{.H = H, .Hkv = Hkv};
    ops::attention_forward(out.view(), lse.view(), qkv.view(), Tensor{}, heads);
    std::vector<float> first;
    for (int run = 0; run < 2; ++run) {
        DeviceBuffer dqkv(Device::cuda, DType::f32, {B, T, W});
        ops::attention_backward(dqkv.view(), dout.view(), out.view(), lse.view(), qkv.view(),
                                Tensor{}, heads);
        if (run == 0)
            first = download(dqkv);
        else
            EXPECT_TRUE(test::bitwise_equal(first, download(dqkv)));
    }
}

// --- Model and decode ops ------------------------------------------------------------------------

// The mask is integer Philox on both devices and the scale the same float: bitwise equal. Odd
// C and row0 start and end the rows part-way through a Philox block; applying it twice (forward,
// then the backward on the same buffer) checks the same mask comes back.
TEST_F(CudaOps, DropoutMaskIsBitwiseTheCpus) {
    const int N = 301, C = 97;
    for (float rate : {0.1f, 0.5f})
        compare_devices(
            "dropout",
            [&](Device d) {
                DeviceBuffer x = upload(d, randn(N * C, 40), {N, C});
                const ops::DropoutMask m{
                    .rate = rate, .seed = 0x9e3779b97f4a7c15ull, .stream = 7, .row0 = 1001};
                ops::dropout(x.view(), m);
                auto once = download(x);
                ops::dropout(x.view(), m);
                return Outputs{{"forward", once}, {"twice", download(x)}};
            },
            {0, 0});
}

// Column sums of N unit-normal rows: the CPU adds rows in order, the GPU in 16 strided groups
// and then the group sums. Either rounds ~N times at partial sums of size ~sqrt(N) (~30 here),
// a random walk of ~sqrt(N) ulp(30) ~ 1e-4 at worst and ~1e-5 typically.
TEST_F(CudaOps, BiasBackward) {
    const int N = 1000, O = 333;
    compare_devices("bias_backward",
                    [&](Device d) {
                        DeviceBuffer dy = upload(d, randn(N * O, 41), {N, O});
                        DeviceBuffer db = upload(d, test::accumulate_pattern(O), {O});
                        ops::bias_backward(db.view(), dy.view());
                        return Outputs{{"db", download(db)}};
                    },
                    {1e-4, 1e-5});
}

TEST_F(CudaOps, BiasBackwardIsDeterministic) {
    const int N = 4099, O = 77;
    DeviceBuffer dy = upload(Device::cuda, randn(N * O, 42), {N, O});
    std::vector<float> first;
    for (int run = 0; run < 2; ++run) {
        DeviceBuffer db(Device::cuda, DType::f32, {O});
        ops::bias_backward(db.view(), dy.view());
        if (run == 0)
            first = download(db);
        else
            EXPECT_TRUE(test::bitwise_equal(first, download(db)));
    }
}

// Sums of D squares (and of D products) in another order, each rounding at ~1 ulp of a sum of
// size ~D: rstd and xhat differ by a few ulp (rel 1e-5 with margin); the backward's difference
// dx - xhat m cancels, so its error is absolute, of the size of its inputs' ulp (1e-5 at ~10).
TEST_F(CudaOps, QkNorm) {
    const int N = 37, H = 4, Hkv = 2, W = 9 * 64;
    for (int D : {64, 24})
        compare_devices("qk_norm D" + std::to_string(D),
                        [&](Device d) {
                            DeviceBuffer x = upload(d, randn(N * W, 43, 3.f, 0.5f), {N, W});
                            DeviceBuffer rstd(d, DType::f32, {N, H + Hkv});
                            const ops::QkNormHeads h{.col0 = D, .heads = H + Hkv, .head_dim = D};
                            ops::qk_norm_forward(x.view(), rstd.view(), h, 1e-6f);
                            DeviceBuffer dx = upload(d, randn(N * W, 44), {N, W});
                            ops::qk_norm_backward(dx.view(), x.view(), rstd.view(), h);
                            return Outputs{{"xhat", download(x)},
                                           {"rstd", download(rstd)},
                                           {"dx", download(dx)}};
                        },
                        {1e-5, 1e-5});
}

// The decode attention's nonlinearities: softmax with and without ALiBi, and two others.
struct DecodeAct {
    const char* name;
    kernels::AttnActParams act;
    bool alibi;
};
const DecodeAct kDecodeActs[] = {{"softmax", {}, false},
                                 {"softmax alibi", {}, true},
                                 {"norm_elu", {kernels::AttnAct::norm_elu, 1.f, 1e-5f}, true},
                                 {"sqrelu", {kernels::AttnAct::sqrelu, 1024.f, 1e-5f}, false}};

std::vector<float> alibi_slopes(int H) {
    std::vector<float> s(H);
    for (int h = 0; h < H; ++h) s[h] = std::pow(2.f, -8.f * (h + 1) / H);
    return s;
}

// Outputs are weighted means of unit-normal values: |out| < ~1. The backends differ in the
// order of the D-term dot products, of the key sums and in exp (the CPU's vector exp is within
// a few ulp): a few ulp of the scores and weights, as for the training attention ({2e-5, 2e-4}).
constexpr Tolerance kDecodeTol{2e-5, 2e-4};

TEST_F(CudaOps, AttentionDecode) {
    const int M = 5, S = 6, T = 517, Tmax = 600, H = 8, Hkv = 2;
    const std::vector<std::int32_t> seq = {3, 0, 5, 1, 3};
    for (int D : {64, 256})
        for (const DecodeAct& c : kDecodeActs)
            compare_devices(
                std::string("attention_decode D") + std::to_string(D) + " " + c.name,
                [&](Device d) {
                    const int W = (H + 2 * Hkv) * D;  // q read from qkv-like rows
                    DeviceBuffer q = upload(d, randn(M * W, 45), {M, W});
                    DeviceBuffer k = upload(d, randn(S * Hkv * Tmax * D, 46), {S, Hkv, Tmax, D});
                    DeviceBuffer v = upload(d, randn(S * Hkv * Tmax * D, 47), {S, Hkv, Tmax, D});
                    DeviceBuffer sq = upload(d, seq, {M}), sl = upload(d, alibi_slopes(H), {H});
                    DeviceBuffer out(d, DType::f32, {M, H * D});
                    ops::attention_decode(out.view(), q.view(), k.view(), v.view(), sq.view(), T,
                                          c.alibi ? sl.view() : Tensor{},
                                          {.H = H, .Hkv = Hkv, .act = c.act});
                    return Outputs{{"out", download(out)}};
                },
                kDecodeTol);
}

// Scrambled blocks of 16, lengths from 1 to several key tiles; a second run gives the same bits.
TEST_F(CudaOps, AttentionPaged) {
    const int M = 4, block = 16, nb = 64, per_row = 20, H = 6, Hkv = 3, D = 96;
    const std::vector<std::int32_t> lens = {1, 37, 300, 129};
    std::vector<std::int32_t> tables(M * per_row);
    for (int i = 0; i < M * per_row; ++i) tables[i] = (i * 29 + 7) % nb;
    for (const DecodeAct& c : kDecodeActs)
        compare_devices(
            std::string("attention_paged ") + c.name,
            [&](Device d) {
                DeviceBuffer q = upload(d, randn(M * H * D, 48), {M, H * D});
                DeviceBuffer k = upload(d, randn(nb * Hkv * block * D, 49), {nb, Hkv, block, D});
                DeviceBuffer v = upload(d, randn(nb * Hkv * block * D, 50), {nb, Hkv, block, D});
                DeviceBuffer t = upload(d, tables, {M, per_row}), l = upload(d, lens, {M});
                DeviceBuffer sl = upload(d, alibi_slopes(H), {H});
                Outputs outs;
                for (int run = 0; run < 2; ++run) {
                    DeviceBuffer out(d, DType::f32, {M, H * D});
                    ops::attention_paged(out.view(), q.view(), k.view(), v.view(), t.view(),
                                         l.view(), c.alibi ? sl.view() : Tensor{},
                                         {.H = H, .Hkv = Hkv, .scale = 0.1f, .act = c.act});
                    outs.push_back({"out", download(out)});
                }
                EXPECT_TRUE(test::bitwise_equal(outs[0].second, outs[1].second)) << c.name;
                outs.pop_back();
                return outs;
            },
            kDecodeTol);
}

// T5's distance bias (model.position t5_bias): the training attention with a bias per distance
// and its gradient (added to a known pattern; the GPU's own pass sums each distance's B T score
// gradients in another order, ~sqrt(B T) roundings of terms ~1), with dropout too; then KV-cache
// decoding over more positions than the bias has (its last entry serves the farther keys).
TEST_F(CudaOps, AttentionDistanceBias) {
    const int B = 2, T = 70, H = 4, Hkv = 2, D = 64, W = (H + 2 * Hkv) * D, ld = T + 5;
    for (const float rate : {0.f, 0.2f})
        compare_devices(
            rate > 0.f ? "attention t5 dropout" : "attention t5",
            [&](Device d) {
                DeviceBuffer qkv = upload(d, randn(B * T * W, 60), {B, T, W});
                DeviceBuffer dout = upload(d, randn(B * T * H * D, 61), {B, T, H * D});
                DeviceBuffer bias = upload(d, randn(H * ld, 62, 0.5f), {H, ld});
                DeviceBuffer grad = upload(d, test::accumulate_pattern(H * ld), {H, ld});
                const kernels::DistanceBias dist{static_cast<const float*>(bias.data()),
                                                 static_cast<float*>(grad.data()), ld};
                const kernels::AttnDropout drop{.rate = rate, .seed = 9, .stream = 4, .n_head = H};
                const ops::AttentionHeads heads{
                    .H = H, .Hkv = Hkv, .dropout = &drop, .dist = &dist};
                DeviceBuffer out(d, DType::f32, {B, T, H * D}), lse(d, DType::f32, {B, H, T});
                ops::attention_forward(out.view(), lse.view(), qkv.view(), Tensor{}, heads);
                DeviceBuffer dqkv(d, DType::f32, {B, T, W});
                ops::attention_backward(dqkv.view(), dout.view(), out.view(), lse.view(),
                                        qkv.view(), Tensor{}, heads);
                return Outputs{{"out", download(out)},
                               {"lse", download(lse)},
                               {"dqkv", download(dqkv)},
                               {"dbias", download(grad)}};
            },
            {2e-5, 2e-4});
    const int M = 3, S = 4, Td = 300, Tmax = 310, L = 129;
    const std::vector<std::int32_t> seq = {2, 0, 3};
    compare_devices(
        "attention_decode t5",
        [&](Device d) {
            DeviceBuffer q = upload(d, randn(M * H * D, 63), {M, H * D});
            DeviceBuffer k = upload(d, randn(S * Hkv * Tmax * D, 64), {S, Hkv, Tmax, D});
            DeviceBuffer v = upload(d, randn(S * Hkv * Tmax * D, 65), {S, Hkv, Tmax, D});
            DeviceBuffer bias = upload(d, randn(H * L, 66, 2.f), {H, L});
            DeviceBuffer sq = upload(d, seq, {M}), out(d, DType::f32, {M, H * D});
            const kernels::DistanceBias dist{static_cast<const float*>(bias.data()), nullptr, L};
            ops::attention_decode(out.view(), q.view(), k.view(), v.view(), sq.view(), Td, Tensor{},
                                  {.H = H, .Hkv = Hkv, .dist = &dist});
            return Outputs{{"out", download(out)}};
        },
        kDecodeTol);
}

// The table resolved per distance is a copy and the fold adds in the CPU's order: same bits.
TEST_F(CudaOps, DistanceBiasExpandAndFold) {
    const int H = 3, NB = 8, L = 200;
    std::vector<std::int32_t> buckets(L);
    for (int d = 0; d < L; ++d) buckets[d] = std::min(d < 4 ? d : 4 + (d - 4) / 16, NB - 1);
    compare_devices("distance_bias",
                    [&](Device d) {
                        DeviceBuffer table = upload(d, randn(H * NB, 67), {H, NB});
                        DeviceBuffer grad = upload(d, randn(H * L, 68), {H, L});
                        DeviceBuffer b = upload(d, buckets, {L}), dist(d, DType::f32, {H, L});
                        DeviceBuffer gt = upload(d, test::accumulate_pattern(H * NB), {H, NB});
                        ops::distance_bias_expand(dist.view(), table.view(), b.view());
                        ops::distance_bias_fold(gt.view(), grad.view(), b.view());
                        return Outputs{{"dist", download(dist)}, {"grad_table", download(gt)}};
                    },
                    {0, 0});
}

// Dot products of I = 1000 terms of size ~0.1 (sums ~3): the orders differ (the CPU's vector
// lanes, the GPU's 32 lanes and shuffle tree), a random walk of ~sqrt(I) roundings at ulp(3).
// bf16 weights are the same values on both devices, so the same tolerance holds.
TEST_F(CudaOps, LinearDecode) {
    const int M = 7, I = 1000, O = 333;
    for (DType wt : {DType::f32, DType::bf16})
        compare_devices(
            std::string("linear_decode ") + dtype_name(wt),
            [&](Device d) {
                DeviceBuffer x = upload(d, randn(M * I, 51), {M, I});
                DeviceBuffer b = upload(d, randn(O, 52), {O});
                auto w = randn(O * I, 53, 0.1f);
                std::vector<std::uint16_t> w16(w.size());
                kernels::to_bf16(w16.data(), w.data(), w.size());
                DeviceBuffer W = wt == DType::bf16 ? upload(d, w16, {O, I}) : upload(d, w, {O, I});
                DeviceBuffer y(d, DType::f32, {M, O});
                ops::linear_decode(y.view(), x.view(), W.view(), b.view());
                return Outputs{{"y", download(y)}};
            },
            {1e-5, 1e-5});
}

// A row's result does not depend on the rows decoded with it: row 5 of 7 alone, bitwise.
TEST_F(CudaOps, LinearDecodeRowIsBatchInvariant) {
    const int M = 7, I = 515, O = 64;
    const auto x = randn(M * I, 54);
    DeviceBuffer W = upload(Device::cuda, randn(O * I, 55, 0.1f), {O, I});
    DeviceBuffer xs = upload(Device::cuda, x, {M, I});
    DeviceBuffer x5 =
        upload(Device::cuda, std::vector<float>(x.begin() + 5 * I, x.begin() + 6 * I), {1, I});
    DeviceBuffer ys(Device::cuda, DType::f32, {M, O}), y5(Device::cuda, DType::f32, {1, O});
    ops::linear_decode(ys.view(), xs.view(), W.view(), Tensor{});
    ops::linear_decode(y5.view(), x5.view(), W.view(), Tensor{});
    const auto all = download(ys);
    EXPECT_TRUE(test::bitwise_equal(std::vector<float>(all.begin() + 5 * O, all.begin() + 6 * O),
                                    download(y5)));
}

// Sums of D-term dot products and of key (query) terms in other orders, exp within a few ulp:
// as the softmax attention ({2e-5, 2e-4}) for sqrelu and elu. The normalized backward divides
// by eps + z (large where z is small) after the difference dp - c, which cancels where one key
// dominates a row: its errors are ~10x larger (emulation: 4e-5 relative), hence {5e-5, 1e-3}.
// Scores' inputs are scaled by 0.5 so sqrelu's squares stay of order 1.
void compare_attention_act(const AttnCase& c, const kernels::AttnActParams& act, const char* name) {
    const bool norm =
        act.act == kernels::AttnAct::norm_sqrelu || act.act == kernels::AttnAct::norm_elu;
    const int W = (c.H + 2 * c.Hkv) * c.D;
    compare_devices(
        std::string("attention_act ") + name + " T" + std::to_string(c.T) + " D" +
            std::to_string(c.D),
        [&](Device d) {
            DeviceBuffer qkv =
                upload(d, randn(std::size_t(c.B) * c.T * W, 56, 0.5f), {c.B, c.T, W});
            DeviceBuffer dout =
                upload(d, randn(std::size_t(c.B) * c.T * c.H * c.D, 57), {c.B, c.T, c.H * c.D});
            DeviceBuffer sl = upload(d, alibi_slopes(c.H), {c.H});
            const Tensor alibi = c.alibi ? sl.view() : Tensor{};
            const ops::AttentionHeads heads{.H = c.H, .Hkv = c.Hkv, .scale = c.scale};
            DeviceBuffer out(d, DType::f32, {c.B, c.T, c.H * c.D}),
                dqkv(d, DType::f32, {c.B, c.T, W});
            ops::attention_act_forward(out.view(), qkv.view(), alibi, heads, act);
            ops::attention_act_backward(dqkv.view(), dout.view(), qkv.view(), alibi, heads, act);
            return Outputs{{"out", download(out)}, {"dqkv", download(dqkv)}};
        },
        norm ? Tolerance{5e-5, 1e-3} : Tolerance{2e-5, 2e-4}, /*conditioned=*/true);
}

TEST_F(CudaOps, AttentionActNonlinearities) {
    using kernels::AttnAct;
    compare_attention_act({.B = 2, .T = 70, .H = 4, .Hkv = 2, .D = 64, .alibi = true, .scale = 0.f},
                          {AttnAct::sqrelu, 128.f, 1e-5f}, "sqrelu");
    compare_attention_act(
        {.B = 1, .T = 200, .H = 2, .Hkv = 1, .D = 40, .alibi = false, .scale = 0.f},
        {AttnAct::elu, 256.f, 1e-5f}, "elu");
    compare_attention_act(
        {.B = 1, .T = 97, .H = 6, .Hkv = 2, .D = 256, .alibi = true, .scale = 0.f},
        {AttnAct::norm_sqrelu, 1.f, 1e-5f}, "norm_sqrelu");
    compare_attention_act(
        {.B = 3, .T = 5, .H = 2, .Hkv = 2, .D = 8, .alibi = false, .scale = 0.125f},
        {AttnAct::norm_elu, 1.f, 1e-5f}, "norm_elu");
}

TEST_F(CudaOps, AttentionActBackwardIsDeterministic) {
    const int B = 2, T = 130, H = 4, Hkv = 2, D = 64, W = (H + 2 * Hkv) * D;
    DeviceBuffer qkv = upload(Device::cuda, randn(B * T * W, 58, 0.5f), {B, T, W});
    DeviceBuffer dout = upload(Device::cuda, randn(B * T * H * D, 59), {B, T, H * D});
    const kernels::AttnActParams act{kernels::AttnAct::norm_elu, 1.f, 1e-5f};
    std::vector<float> first;
    for (int run = 0; run < 2; ++run) {
        DeviceBuffer dqkv(Device::cuda, DType::f32, {B, T, W});
        ops::attention_act_backward(dqkv.view(), dout.view(), qkv.view(), Tensor{},
                                    {.H = H, .Hkv = Hkv}, act);
        if (run == 0)
            first = download(dqkv);
        else
            EXPECT_TRUE(test::bitwise_equal(first, download(dqkv)));
    }
}

// --- Buffers ------------------------------------------------------------------------------------

// --- The model's last pieces ------------------------------------------------------------------

std::vector<std::int32_t> download_i32(const DeviceBuffer& b) {
    std::vector<std::int32_t> v(b.view().numel());
    kernels::copy(Tensor{v.data(), DType::i32, b.view().shape, Device::cpu}, b.view());
    return v;
}

TEST_F(CudaOps, VocabParallelLossPhases) {
    // A shard of 1000 valid columns in rows of 1024 (the padding is zeroed), vocabulary from 2000.
    const int N = 37, Vl = 1000, ld = 1024, v0 = 2000;
    const auto logits = randn(N * ld, 60, 3.f);
    std::vector<std::int32_t> t(N);
    for (int n = 0; n < N; ++n) t[n] = n % 7 == 3 ? -1 : v0 - 500 + 97 * n;  // local and remote
    compare_devices(
        "vocab-parallel",
        [&](Device d) {
            DeviceBuffer x = upload(d, logits, {N, ld}), tg = upload(d, t, {N});
            DeviceBuffer mx(d, DType::f32, {N}), st(d, DType::f32, {N, 2}), ls(d, DType::f32, {N});
            const Tensor cols = x.view().columns(0, Vl);
            ops::ce_row_max(mx.view(), cols, tg.view());
            ops::ce_row_sums(st.view(), cols, tg.view(), mx.view(), v0, true);
            ops::ce_finish(cols, ls.view(), tg.view(), mx.view(), st.view(), v0, 0.5f, 1e-3f);
            return Outputs{{"row_max", download(mx)},
                           {"stats", download(st)},
                           {"losses", download(ls)},
                           {"dlogits", download(x)}};
        },
        {1e-7, 1e-5});
}

TEST_F(CudaOps, KvStoreAndPositions) {
    const int M = 9, H = 4, Hkv = 2, D = 64, W = (H + 2 * Hkv) * D, block = 16, blocks = 12;
    const auto qkv = randn(M * W, 61), pool = randn(blocks * Hkv * block * D, 62);
    std::vector<std::int32_t> tables(M * 3), pos(M);
    for (int i = 0; i < M * 3; ++i) tables[i] = (i * 5 + 1) % blocks;
    for (int m = 0; m < M; ++m) pos[m] = (m * 11) % (3 * block);
    const int B = 3, T = 5, N = B * T, C = 96, P = 64;
    const auto x0 = randn(N * C, 63), wpe = randn(T * C, 64), table = randn(P * C, 65);
    const std::vector<float> scale = {0.61f};
    const std::vector<std::int32_t> pos0 = {0, 17, 40};
    compare_devices(
        "kv_store, positions",
        [&](Device d) {
            DeviceBuffer k = upload(d, pool, {blocks, Hkv, block, D}),
                         v = upload(d, pool, k.view().shape);
            ops::kv_store(k.view(), v.view(), upload(d, qkv, {M, W}).view(),
                          upload(d, tables, {M, 3}).view(), upload(d, pos, {M}).view(), H);
            DeviceBuffer x = upload(d, x0, {N, C}), ds = upload(d, scale, {1});
            ops::position_embedding_forward(x.view(), upload(d, wpe, {T, C}).view(), T, true);
            const DeviceBuffer tb = upload(d, table, {P, C}), p0 = upload(d, pos0, {B});
            ops::sinusoid_position_forward(x.view(), tb.view(), upload(d, scale, {1}).view(),
                                           p0.view(), T, true);
            ops::sinusoid_position_backward(ds.view(), x.view(), tb.view(), p0.view(), T);
            return Outputs{{"k", download(k)},
                           {"v", download(v)},
                           {"x", download(x)},
                           {"dscale", download(ds)}};
        },
        {1e-7, 1e-6});
}

TEST_F(CudaOps, ElementwiseAndHostSums) {
    const int N = 301, C = 77;
    const auto a = randn(N * 2 * C, 66), b = randn(N * C, 67);
    double sums[2][3];
    compare_devices("mul, axpy, fill",
                    [&](Device d) {
                        DeviceBuffer w = upload(d, a, {N, 2 * C}), y = upload(d, b, {N, C});
                        DeviceBuffer o(d, DType::f32, {N, C}), f(d, DType::f32, {N});
                        ops::mul(o.view(), w.view().columns(C, C), y.view());
                        ops::mul(w.view().columns(0, C), o.view(), y.view());
                        ops::axpy(y.view(), o.view(), -0.37f);
                        ops::fill(f.view(), 2.5f);
                        double* s = sums[d == Device::cuda];
                        s[0] = ops::sum(f.view());
                        s[1] = ops::abs_sum(w.view().columns(C, C));
                        s[2] = ops::attention_score_abs_sum(w.view(), 7, 43, 5, 1, 22, 0.3f);
                        return Outputs{{"mul", download(o)},
                                       {"mul strided", download(w)},
                                       {"axpy", download(y)},
                                       {"fill", download(f)}};
                    },
                    {1e-7, 1e-6});
    expect_sum_close("sum", sums[1][0], sums[0][0], 1e-12);
    expect_sum_close("abs_sum", sums[1][1], sums[0][1], 1e-9);
    expect_sum_close("attention_score_abs_sum", sums[1][2], sums[0][2], 1e-6);
}

TEST_F(CudaOps, VqCodebookAndQuantizer) {
    const int S = 512, dk = 64, N = 1000;
    const auto c_sum = randn(S * dk, 68), qk = randn(N * 2 * dk, 69);
    auto c_count = randn(S, 70, 3.f);
    for (int s = 0; s < S; s += 9) c_count[s] = 0.f;
    std::vector<std::int32_t> codes[2];
    compare_devices(
        "vq",
        [&](Device d) {
            DeviceBuffer cb(d, DType::f32, {S, dk}), z(d, DType::i32, {N}), e(d, DType::f32, {N});
            ops::vq_codebook(cb.view(), upload(d, c_sum, {S, dk}).view(),
                             upload(d, c_count, {S}).view());
            DeviceBuffer x = upload(d, qk, {N, 2 * dk}), g = upload(d, qk, {N, 2 * dk});
            const Tensor keys = x.view().columns(dk, dk);
            ops::vq_quantize(z.view(), e.view(), keys, cb.view());
            codes[d == Device::cuda] = download_i32(z);
            ops::vq_commit_grad(g.view().columns(dk, dk), keys, cb.view(), z.view(), 0.3f);
            DeviceBuffer sums = upload(d, c_sum, {S, dk}), counts = upload(d, c_count, {S});
            ops::vq_codebook_stats(sums.view(), counts.view(), keys, z.view());
            return Outputs{{"codebook", download(cb)},
                           {"err", download(e)},
                           {"commit", download(g)},
                           {"sums", download(sums)},
                           {"counts", download(counts)}};
        },
        {1e-6, 1e-5});
    EXPECT_EQ(codes[1], codes[0]);
}

// Transformer-VQ's attention at the default run's widths (blocks of 32, 64 codes, dk 64, dv 224):
// T = 100 crosses three block edges (the cache from the third block on); carried states from
// lead texts of different lengths per row start each row off the block grid.
void compare_vq_attention(bool carried) {
    const int B = 3, T = 100, L = 32, S = 64, dk = 64, dv = 224, N = B * T;
    const kernels::VqAttnShape sh{L, S, dk, dv};
    const auto cb = randn(S * dk, 90, 0.5f), rel = randn((L + 1) * dk, 91, 0.3f);
    const auto u = randn(dk, 92, 0.2f), vb = randn(dk, 93, 0.2f);
    const auto qk = randn(N * 2 * dk, 94), act = randn(N * 2 * dv, 95), dout = randn(N * dv, 96);
    std::vector<std::int32_t> z(N);
    for (int n = 0; n < N; ++n) z[n] = (n * 29 + n / 7) % (S - 3);  // the last codes unused
    std::vector<kernels::VqAttnState> lead(B);
    for (int b = 0; carried && b < B; ++b) {  // each row's state after 45 + 11 b tokens
        const int n = 45 + 11 * b;
        std::vector<float> o(n * dv), l(n);
        const auto q = randn(n * dk, 97 + b), v = randn(n * dv, 100 + b);
        kernels::vq_attention_forward(o.data(), l.data(), q.data(), dk, z.data(), v.data(), dv,
                                      cb.data(), rel.data(), u.data(), vb.data(), 1, n, sh,
                                      &lead[b]);
    }
    compare_devices(
        carried ? "vq attention, carried states" : "vq attention",
        [&](Device d) {
            std::vector<kernels::VqAttnState> st = lead;
            DeviceBuffer tb[4] = {upload(d, cb, {S, dk}), upload(d, rel, {L + 1, dk}),
                                  upload(d, u, {dk}), upload(d, vb, {dk})};
            const ops::VqTables t{tb[0].view(), tb[1].view(), tb[2].view(), tb[3].view()};
            DeviceBuffer x = upload(d, qk, {N, 2 * dk}), a = upload(d, act, {N, 2 * dv});
            DeviceBuffer zz = upload(d, z, {N}), o(d, DType::f32, {N, dv}), l(d, DType::f32, {N});
            ops::vq_attention_forward(o.view(), l.view(), x.view().columns(0, dk), zz.view(),
                                      a.view().columns(0, dv), t, B, T, sh,
                                      carried ? st.data() : nullptr);
            std::vector<float> state;
            for (const auto& s : st) {
                state.push_back(static_cast<float>(s.pos));
                state.insert(state.end(), s.z.begin(), s.z.end());
                state.insert(state.end(), s.v.begin(), s.v.end());
                state.insert(state.end(), s.count.begin(), s.count.end());
                state.insert(state.end(), s.mean.begin(), s.mean.end());
            }
            DeviceBuffer gx = upload(d, qk, {N, 2 * dk}), ga = upload(d, act, {N, 2 * dv});
            DeviceBuffer go = upload(d, dout, {N, dv});
            DeviceBuffer vec = upload(d, randn((L + 3) * dk, 103), {(L + 3) * dk});
            const Tensor vv = vec.view();
            const Tensor du{vv.data, DType::f32, {dk}, d};
            const Tensor dvb{static_cast<float*>(vv.data) + dk, DType::f32, {dk}, d};
            const Tensor drel{static_cast<float*>(vv.data) + 2 * dk, DType::f32, {L + 1, dk}, d};
            ops::vq_attention_backward({gx.view().columns(0, dk), gx.view().columns(dk, dk),
                                        ga.view().columns(0, dv), du, dvb, drel},
                                       go.view(), o.view(), l.view(), x.view().columns(0, dk),
                                       zz.view(), a.view().columns(0, dv), t, B, T, sh,
                                       carried ? lead.data() : nullptr);
            return Outputs{{"out", download(o)}, {"lse", download(l)},
                           {"state", state},     {"dq | dk", download(gx)},
                           {"dv", download(ga)}, {"du | dvb | drel", download(vec)}};
        },
        {1e-5, 1e-4}, /*conditioned=*/true);
}

TEST_F(CudaOps, VqAttention) {
    compare_vq_attention(false);
}

TEST_F(CudaOps, VqAttentionCarriedStates) {
    compare_vq_attention(true);
}

// While tracing (log.profile_steps), each CUDA op is an event named for the op that lasts until
// its kernels are done (kernels/ops/dispatch.h): a 4096^3 fp32 GEMM (137 GFLOP, no TF32) takes
// over 1 ms on any GPU of today (under 100 TFLOP/s in fp32), far longer than its launch.
TEST_F(CudaOps, TracedOpsAreEventsThatWaitForTheirKernels) {
    const int n = 4096;
    DeviceBuffer a = upload(Device::cuda, randn(std::size_t(n) * n, 60), {n, n});
    DeviceBuffer c(Device::cuda, DType::f32, {n, n});
    ops::gemm(c.view(), a.view(), false, a.view(), false);  // warm: cuBLASLt's first call
    trace_clear();
    trace_set_enabled(true);
    ops::gemm(c.view(), a.view(), false, a.view(), false);
    trace_set_enabled(false);
    const auto events = trace_events();
    trace_clear();
    ASSERT_EQ(events.size(), 1u);
    EXPECT_STREQ(events[0].name, "gemm");
    EXPECT_GT(events[0].dur_ns, 1'000'000) << "the event ended before the GEMM could have";
}

TEST_F(CudaOps, BufferRoundTrip) {
    const auto host = randn(1000, 27);
    DeviceBuffer a = upload(Device::cuda, host, {10, 100});
    DeviceBuffer b(Device::cuda, DType::f32, {1000});
    kernels::copy(b.view(), a.view());  // device to device, reshaped
    EXPECT_TRUE(test::bitwise_equal(download(b), host));
    EXPECT_EQ(DeviceBuffer(Device::cuda, DType::f32, {7}).bytes(), 28u);
    EXPECT_TRUE(test::bitwise_equal(download(DeviceBuffer(Device::cuda, DType::f32, {3})),
                                    std::vector<float>(3, 0.f)));  // zero-filled
}

// --- Without a GPU ------------------------------------------------------------------------------

TEST(CudaBuild, NoDeviceFailsCleanly) {
    ASSERT_TRUE(kernels::cuda_built());
    if (kernels::cuda_device_count() > 0) GTEST_SKIP() << "a GPU is present";
    std::printf("[ reason   ] %s\n", kernels::cuda_unavailable_reason().c_str());
    EXPECT_NE(kernels::cuda_unavailable_reason().find("no CUDA device"), std::string::npos);
    expect_error([] { DeviceBuffer b(Device::cuda, DType::f32, {4}); },
                 "DeviceBuffer: needs a CUDA device, but no CUDA device");
    expect_error([] { kernels::set_cuda_device(0); }, "no CUDA device");
    std::vector<float> a(16);
    Tensor v{a.data(), DType::f32, {4, 4}, Device::cuda};
    expect_error([&] { ops::gemm(v, v, false, v, false); },
                 "gemm: needs a CUDA device, but no CUDA device");
    expect_error(
        [&] {
            kernels::copy(Tensor{a.data(), DType::f32, {16}, Device::cpu}, v);
        },
        "copy: needs a CUDA device");
    // The CPU side of the same build is unaffected.
    DeviceBuffer host(Device::cpu, DType::f32, {4});
    EXPECT_EQ(host.bytes(), 16u);
}

}  // namespace
}  // namespace meshlm
