// Training on the GPU against the CPU: one Learner per device with the same config, seed and
// batches, a few optimizer steps of each model family. The GPU's GEMMs and reductions sum in
// other orders than the CPU's, so the two agree to fp32 rounding that grows over the steps:
// each step's loss to 1e-4 relative and the final weights to 1e-5 mean absolute difference
// (the step's learning rate is 1e-3: a mean that large would be a wrong update, not rounding).
// Skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "gpu_vs_cpu.h"
#include "meshlm/core/model_comm.h"
#include "meshlm/kernels/device.h"
#include "meshlm/kernels/device_buffer.h"
#include "meshlm/model/embedding.h"
#include "meshlm/train/learner.h"
#include "test_util.h"

namespace meshlm {
namespace {

struct Trained {
    std::vector<float> losses, grad_norms, params;
};

constexpr int kB = 2, kT = 16, kSteps = 4;

Trained train(const ModelConfig& m, const OptimConfig& o, Device d, Precision p, Recompute r,
              int micro, bool carry) {
    Learner learner(m, o, kB, kT, kSteps, nullptr, 0, nullptr, r, p, d);
    learner.init_params(1234);
    learner.set_vq_carry(carry);  // Transformer-VQ: each step continues the last one's rows
    learner.set_dropout(99, 0);
    const int n = micro * kB * kT;
    std::vector<std::int32_t> tokens(n), targets(n);
    Trained t;
    for (int s = 0; s < kSteps; ++s) {
        for (int i = 0; i < n; ++i) {
            tokens[i] = (i * 37 + s * 11 + i / 5) % m.vocab_size;
            targets[i] = i % 7 == 3 ? -1 : (tokens[i] * 3 + 1) % m.vocab_size;  // some masked
        }
        const StepStats st = learner.train_step(tokens.data(), targets.data(), micro);
        t.losses.push_back(st.loss), t.grad_norms.push_back(st.grad_norm);
    }
    const float* w = learner.full_params();
    t.params.assign(w, w + learner.full_layout().total());
    return t;
}

struct Case {
    std::string name;
    ModelConfig model;
    Precision precision = Precision::fp32;
    Recompute recompute = Recompute::none;
    int micro = 1;
    std::string optim = "adamw";
    bool carry = false;  // model.vq.update_len: the VQ attention states carried across steps
};

std::vector<Case> cases() {
    std::vector<Case> out;
    const ModelConfig gpt2 = test::tiny_model();
    out.push_back({"gpt2", gpt2});
    ModelConfig llama = gpt2;
    llama.position = "rope", llama.norm = "rmsnorm", llama.norm_bias = false;
    llama.mlp = "swiglu", llama.n_head = 4, llama.n_kv_head = 2, llama.tied_head = false;
    llama.qkv_bias = llama.proj_bias = llama.mlp_bias = false;
    out.push_back({"llama (rope, rmsnorm, swiglu, GQA, untied)", llama});
    ModelConfig gptj = gpt2;
    gptj.block = "parallel", gptj.position = "rope", gptj.rope_dim = 8;
    gptj.rope_style = "interleaved", gptj.tied_head = false, gptj.head_bias = true;
    out.push_back({"gpt-j (parallel block, partial interleaved rope)", gptj});
    ModelConfig alibi = gpt2;
    alibi.position = "alibi", alibi.qk_norm = true;
    out.push_back({"alibi + qk_norm", alibi});
    ModelConfig drop = gpt2;
    drop.dropout_embd = drop.dropout_resid = drop.dropout_attn = 0.1f;
    out.push_back({"gpt2 dropout (embedding, residual, attention)", drop});
    ModelConfig t5 = gpt2;  // kT = 16 positions past max_distance: the last bucket's share too
    t5.position = "t5_bias", t5.t5_buckets = 8, t5.t5_max_distance = 9, t5.dropout_attn = 0.1f;
    out.push_back({"t5_bias + attention dropout", t5});
    out.push_back({"gpt2 bf16", gpt2, Precision::bf16});
    out.push_back({"gpt2 recompute block, accum 2", gpt2, Precision::fp32, Recompute::block, 2});
    out.push_back({"gpt2 lion", gpt2, Precision::fp32, Recompute::none, 1, "lion"});
    out.push_back({"gpt2 adafactor", gpt2, Precision::fp32, Recompute::none, 1, "adafactor"});
    // Transformer-VQ: blocks of 4 so that kT = 16 reads the window and the compressed cache;
    // its codebook moves by the statistics' moving average, not the optimizer.
    ModelConfig vq = gpt2;
    vq.attention = "vq", vq.mlp = "none", vq.norm = "rmsnorm", vq.norm_bias = false;
    vq.position = "none", vq.n_head = 1, vq.tied_head = false;
    vq.vq_block_len = 4, vq.vq_codes = 8, vq.vq_d_k = 8, vq.vq_d_v = 32;
    out.push_back({"vq", vq});
    ModelConfig vq_mlp = vq;
    vq_mlp.mlp = "gelu";
    out.push_back({"vq + mlp, carried states, recompute block, accum 2", vq_mlp, Precision::fp32,
                   Recompute::block, 2, "adamw", true});
    return out;
}

TEST(CudaTraining, EveryFamilyMatchesTheCpu) {
    if (kernels::cuda_device_count() == 0)
        GTEST_SKIP() << "no GPU here: " << kernels::cuda_unavailable_reason();
    kernels::set_cuda_device(0);
    for (const Case& c : cases()) {
        SCOPED_TRACE(c.name);
        OptimConfig o;
        o.name = c.optim, o.lr = 1e-3f, o.warmup_steps = 0;
        const Trained gpu =
            train(c.model, o, Device::cuda, c.precision, c.recompute, c.micro, c.carry);
        const Trained cpu =
            train(c.model, o, Device::cpu, c.precision, c.recompute, c.micro, c.carry);
        test::expect_gpu_matches_cpu(gpu, cpu, c.name);
    }
}

// model.position scaled_sin (Transformer-VQ's, whose attention trains on the CPU only for now):
// the embedding on the GPU reads its sinusoid table from GPU memory, copied again when a
// position past it grows the table (row 1 starts at 40, max_seq_len 16). x and the scale's
// gradient against the CPU's.
TEST(CudaTraining, ScaledSinusoidsReadTheirTableOnTheGpu) {
    if (kernels::cuda_device_count() == 0)
        GTEST_SKIP() << "no GPU here: " << kernels::cuda_unavailable_reason();
    kernels::set_cuda_device(0);
    ModelConfig m = test::tiny_model();
    m.attention = "vq", m.position = "scaled_sin", m.vq_pe_lam = 64.f;
    const int B = 2, T = 5, N = B * T, C = m.d_model, V = m.vocab_size;
    std::vector<float> wte(static_cast<std::size_t>(V) * C), r(static_cast<std::size_t>(N) * C);
    for (std::size_t i = 0; i < wte.size(); ++i) wte[i] = 0.01f * static_cast<float>(i % 97);
    for (std::size_t i = 0; i < r.size(); ++i) r[i] = std::sin(0.37f * static_cast<float>(i));
    std::vector<std::int32_t> tok(N);
    for (int n = 0; n < N; ++n) tok[n] = (n * 7 + 3) % V;
    const std::int64_t pos0[B] = {3, 40};
    auto run = [&](Device d) {
        SingleRank one;
        Embedding emb(m, one);
        emb.device = d;
        auto put = [d](const auto& v, DType t) {
            kernels::DeviceBuffer b(d, t, {static_cast<std::int64_t>(v.size())});
            kernels::copy(b.view(), Tensor{const_cast<void*>(static_cast<const void*>(v.data())), t,
                                           b.view().shape, Device::cpu});
            return b;
        };
        const std::vector<float> scale = {0.7f}, dscale0 = {0.25f};
        kernels::DeviceBuffer w = put(wte, DType::f32), t = put(tok, DType::i32),
                              s = put(scale, DType::f32), ds = put(dscale0, DType::f32),
                              dx = put(r, DType::f32),
                              dw = put(std::vector<float>(wte.size()), DType::f32);
        kernels::DeviceBuffer x(d, DType::f32, {N, C});
        const auto f = [](const kernels::DeviceBuffer& b) { return static_cast<float*>(b.data()); };
        emb.forward(f(x), static_cast<const std::int32_t*>(t.data()), f(w), nullptr, f(s), N, T,
                    pos0);
        emb.backward(f(dw), nullptr, f(ds), f(dx), static_cast<const std::int32_t*>(t.data()), N, T,
                     pos0);
        std::vector<float> out(static_cast<std::size_t>(N) * C + 1);
        kernels::copy(Tensor{out.data(), DType::f32, {N, C}, Device::cpu}, x.view());
        kernels::copy(Tensor{out.data() + N * C, DType::f32, {1}, Device::cpu}, ds.view());
        return out;
    };
    const std::vector<float> gpu = run(Device::cuda), cpu = run(Device::cpu);
    ASSERT_EQ(gpu.size(), cpu.size());
    for (std::size_t i = 0; i + 1 < cpu.size(); ++i)
        ASSERT_NEAR(gpu[i], cpu[i], 1e-6f) << "x element " << i;
    EXPECT_NEAR(gpu.back(), cpu.back(), 1e-5f * std::fabs(cpu.back())) << "the scale's gradient";
}

}  // namespace
}  // namespace meshlm
