// Several ranks on GPUs (under mpirun, one GPU per rank): the Learner over a mesh of NcclComms
// (parallel/device_comm.h) against the same Learner over the MPI mesh on the CPU, with the same
// config, seed and rows: DP 2 at every ZeRO stage (stage 3 also in bf16, whose units travel as
// bf16) and TP 2. Losses per step to 1e-4 relative and final weights to 1e-5 mean absolute
// difference, the tolerances of cuda_train_test (the GPU sums in other orders; a wrong
// collective is off by the update itself). Then the checkpoint path: the GPU learner's
// local_chunk() against the CPU's, and the CPU's chunk loaded into a fresh GPU learner gives
// the CPU's weights bitwise (host copies and device gathers move bits, never round them).
//
// NCCL refuses a communicator with two ranks on one GPU ("Duplicate GPU detected"), so every
// rank skips, saying so, where fewer GPUs than ranks are visible. Assertions are EXPECT_*: a
// rank that returned early would skip collectives its peer enters.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "gpu_vs_cpu.h"
#include "meshlm/core/threads.h"
#include "meshlm/kernels/device.h"
#include "meshlm/parallel/device_comm.h"
#include "meshlm/parallel/mesh.h"
#include "meshlm/train/learner.h"
#include "mpi_main.h"
#include "test_util.h"

namespace meshlm {
namespace {

constexpr int kB = 2, kT = 16, kMicro = 2, kSteps = 4;

struct Case {
    std::string name;
    int data, model, stage;
    Precision precision = Precision::fp32;
};

struct Trained {
    std::vector<float> losses, params;
};

// This data index's rows of step s (every model rank of a replica trains on the same rows).
void rows(const ModelConfig& m, int s, int d, std::vector<std::int32_t>& tok,
          std::vector<std::int32_t>& tgt) {
    const int n = kMicro * kB * kT;
    tok.resize(n), tgt.resize(n);
    for (int i = 0; i < n; ++i) {
        const int g = i + d * n;
        tok[i] = (g * 37 + s * 11 + g / 5) % m.vocab_size;
        tgt[i] = g % 7 == 3 ? -1 : (tok[i] * 3 + 1) % m.vocab_size;  // some masked
    }
}

Trained train(Learner& l, const ModelConfig& m, int d) {
    l.init_params(1234);
    Trained t;
    std::vector<std::int32_t> tok, tgt;
    for (int s = 0; s < kSteps; ++s) {
        rows(m, s, d, tok, tgt);
        t.losses.push_back(l.train_step(tok.data(), tgt.data(), kMicro).loss);
    }
    const float* w = l.full_params();
    t.params.assign(w, w + l.full_layout().total());
    return t;
}

class CudaMeshTest : public ::testing::Test {
  protected:
    void SetUp() override {
        Comm& world = test::mpi_world();
        if (world.size() != 2)
            GTEST_SKIP() << "launch with mpirun -np 2 (" << world.size() << " ranks here)";
        const int gpus = kernels::cuda_device_count();
        if (gpus < world.size())
            GTEST_SKIP() << world.size() << " ranks need as many GPUs (NCCL refuses two ranks on "
                         << "one GPU), this host has " << gpus
                         << (gpus == 0 ? " (" + kernels::cuda_unavailable_reason() + ")" : "");
        kernels::set_cuda_device(world.rank() % gpus);
        if (!nccl_) nccl_ = make_device_world(world, Device::cuda);
    }
    static void TearDownTestSuite() { nccl_.reset(); }
    static std::unique_ptr<Comm> nccl_;
};
std::unique_ptr<Comm> CudaMeshTest::nccl_;

TEST_F(CudaMeshTest, DataAndTensorParallelTrainingMatchesTheCpu) {
    Comm& world = test::mpi_world();
    ASSERT_STREQ(nccl_->backend(), "nccl");
    set_thread_count(1);
    const ModelConfig m = test::tiny_model();
    OptimConfig o;
    o.lr = 1e-3f, o.warmup_steps = 0, o.grad_clip = 1.f;
    const std::vector<Case> cases = {{"DP 2 ZeRO 0", 2, 1, 0},
                                     {"DP 2 ZeRO 1", 2, 1, 1},
                                     {"DP 2 ZeRO 2", 2, 1, 2},
                                     {"DP 2 ZeRO 3", 2, 1, 3},
                                     {"DP 2 ZeRO 3 bf16", 2, 1, 3, Precision::bf16},
                                     {"TP 2", 1, 2, 0}};
    for (const Case& c : cases) {
        SCOPED_TRACE(c.name);
        DeviceMesh host(world, c.data, c.model), dev(*nccl_, c.data, c.model);
        EXPECT_STREQ(dev.data_comm().backend(), "nccl");
        EXPECT_EQ(dev.data_comm().host().rank(), host.data_comm().rank());
        Learner cpu_l(m, o, kB, kT, kSteps, &host.data_comm(), c.stage, &host.model_comm(),
                      Recompute::none, c.precision, Device::cpu);
        Learner gpu_l(m, o, kB, kT, kSteps, &dev.data_comm(), c.stage, &dev.model_comm(),
                      Recompute::none, c.precision, Device::cuda);
        const Trained cpu = train(cpu_l, m, host.data_index());
        const Trained gpu = train(gpu_l, m, dev.data_index());
        test::expect_gpu_matches_cpu(gpu, cpu, c.name, world.rank() == 0);

        // A sharded checkpoint's chunk: read through host copies, written back the same way.
        const Learner::LocalChunk gc = gpu_l.local_chunk();
        std::vector<float> gp(gc.params, gc.params + gc.count);
        const Learner::LocalChunk cc = cpu_l.local_chunk();
        EXPECT_EQ(gc.begin, cc.begin);
        ASSERT_EQ(gc.count, cc.count);
        double chunk_diff = 0;
        for (std::size_t i = 0; i < cc.count; ++i) chunk_diff += std::fabs(gp[i] - cc.params[i]);
        EXPECT_LE(chunk_diff / std::max<std::size_t>(cc.count, 1), 1e-5);
        Learner fresh(m, o, kB, kT, kSteps, &dev.data_comm(), c.stage, &dev.model_comm(),
                      Recompute::none, c.precision, Device::cuda);
        fresh.load_local_chunk(cc.params, cc.m, cc.v, cc.stats, cpu_l.step());
        EXPECT_EQ(fresh.step(), kSteps);
        const float* loaded = fresh.full_params();
        std::size_t differ = 0;
        for (std::size_t i = 0; i < cpu.params.size(); ++i) differ += loaded[i] != cpu.params[i];
        EXPECT_EQ(differ, 0u) << "of " << cpu.params.size() << " weights after load_local_chunk";
    }
}

}  // namespace
}  // namespace meshlm
