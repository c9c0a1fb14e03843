// The CUDA backend against the CPU, op by op, through the same view ops (kernels/ops/): each test
// body builds its inputs from seeds, runs on a device and returns its outputs; it runs once on
// Device::cpu and once on Device::cuda, and every output is compared with a tolerance chosen
// per op and dtype (the two backends sum in different orders and use different exp / tanh, so
// they agree closely, not bitwise). Tests skip, with the runtime's reason, where no GPU is
// present; NoDevice then checks that CUDA requests fail cleanly instead.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernel_check.h"
#include "meshlm/core/error.h"
#include "meshlm/kernels/device.h"
#include "meshlm/kernels/device_buffer.h"
#include "meshlm/kernels/kernels.h"
#include "meshlm/kernels/ops/activation.h"
#include "meshlm/kernels/ops/adamw.h"
#include "meshlm/kernels/ops/attention.h"
#include "meshlm/kernels/ops/cross_entropy.h"
#include "meshlm/kernels/ops/dropout.h"
#include "meshlm/kernels/ops/embedding.h"
#include "meshlm/kernels/ops/gemm.h"
#include "meshlm/kernels/ops/layernorm.h"
#include "meshlm/kernels/ops/rmsnorm.h"
#include "meshlm/kernels/ops/rope.h"

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

template <typename T>
DeviceBuffer upload(Device d, const std::vector<T>& v, Shape s) {
    DeviceBuffer b(d, dtype_of<T>(), s);
    std::vector<T> copy = v;
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

void compare_devices(const std::string& what, const std::function<Outputs(Device)>& body,
                     Tolerance tol) {
    const Outputs cpu = body(Device::cpu), gpu = body(Device::cuda);
    ASSERT_EQ(cpu.size(), gpu.size());
    for (std::size_t k = 0; k < cpu.size(); ++k)
        test::expect_close(what + " " + cpu[k].first, gpu[k].second, test::to_double(cpu[k].second),
                           tol);
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
};

void compare_attention(const AttnCase& c) {
    const int W = (c.H + 2 * c.Hkv) * c.D;
    const std::string what = "attention B" + std::to_string(c.B) + " T" + std::to_string(c.T) +
                             " H" + std::to_string(c.H) + "/" + std::to_string(c.Hkv) + " D" +
                             std::to_string(c.D) + (c.alibi ? " alibi" : "");
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
            const ops::AttentionHeads heads{.H = c.H, .Hkv = c.Hkv, .scale = c.scale};
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

// --- Model ops: dropout, ... -------------------------------------------------------------------

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

// --- Buffers ------------------------------------------------------------------------------------

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
