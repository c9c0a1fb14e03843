// NcclComm (parallel/nccl_comm.h) under mpirun, one rank per GPU: every collective on device
// buffers against values each rank computes locally, as comm_mpi_test does for MpiComm. All
// ranks skip together where the host has fewer GPUs than ranks (NCCL refuses two ranks on one
// GPU). Assertions are EXPECT_*: a rank that returned early would skip collectives.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <numeric>
#include <span>
#include <vector>

#include "meshlm/kernels/device.h"
#include "meshlm/kernels/device_buffer.h"
#include "meshlm/parallel/nccl_comm.h"
#include "mpi_main.h"

namespace meshlm {
namespace {

using kernels::DeviceBuffer;

float value(int rank, std::size_t i) {
    return static_cast<float>((rank + 1) * static_cast<int>(i % 17) + static_cast<int>(i % 5));
}

DeviceBuffer on_gpu(const std::vector<float>& v) {
    DeviceBuffer b(Device::cuda, DType::f32, {static_cast<std::int64_t>(v.size())});
    std::vector<float> copy = v;
    kernels::copy(b.view(), Tensor{copy.data(), DType::f32, b.view().shape, Device::cpu});
    return b;
}

std::vector<float> on_host(const DeviceBuffer& b) {
    std::vector<float> v(b.view().numel());
    kernels::copy(Tensor{v.data(), DType::f32, b.view().shape, Device::cpu}, b.view());
    return v;
}

class NcclCommTest : public ::testing::Test {
  protected:
    void SetUp() override {
        Comm& world = test::mpi_world();
        if (kernels::cuda_device_count() < world.size())
            GTEST_SKIP() << world.size() << " ranks need as many GPUs, this host has "
                         << kernels::cuda_device_count() << " ("
                         << kernels::cuda_unavailable_reason() << ")";
        kernels::set_cuda_device(world.rank());
        if (!comm_) comm_ = std::make_unique<NcclComm>(world, 60.0);
        N = comm_->size();
        R = comm_->rank();
    }
    static void TearDownTestSuite() { comm_.reset(); }
    static std::unique_ptr<NcclComm> comm_;
    int N = 0, R = 0;
};
std::unique_ptr<NcclComm> NcclCommTest::comm_;

TEST_F(NcclCommTest, RanksMatchTheBootstrap) {
    EXPECT_STREQ(comm_->backend(), "nccl");
    EXPECT_EQ(N, test::mpi_world().size());
    EXPECT_EQ(R, test::mpi_world().rank());
}

TEST_F(NcclCommTest, AllReduceSumAndMax) {
    const std::size_t n = 1003;
    std::vector<float> h(n);
    for (std::size_t i = 0; i < n; ++i) h[i] = value(R, i);
    DeviceBuffer b = on_gpu(h);
    comm_->all_reduce_sum(b.view().f32(), n);
    const auto got = on_host(b);
    for (std::size_t i = 0; i < n; ++i) {
        float want = 0;
        for (int r = 0; r < N; ++r) want += value(r, i);
        EXPECT_EQ(got[i], want) << i;
    }
    DeviceBuffer m = on_gpu({static_cast<float>(R)});
    comm_->all_reduce_max(m.view().f32(), 1);
    EXPECT_EQ(on_host(m)[0], N - 1);
}

TEST_F(NcclCommTest, ReduceScatterEvenAndUneven) {
    const std::size_t n = 64;
    std::vector<float> in(n * N);
    for (std::size_t i = 0; i < in.size(); ++i) in[i] = value(R, i);
    DeviceBuffer a = on_gpu(in), out(Device::cuda, DType::f32, {static_cast<std::int64_t>(n)});
    comm_->reduce_scatter_sum(a.view().f32(), out.view().f32(), n);
    auto got = on_host(out);
    for (std::size_t i = 0; i < n; ++i) {
        float want = 0;
        for (int r = 0; r < N; ++r) want += value(r, R * n + i);
        EXPECT_EQ(got[i], want) << i;
    }
    std::vector<std::size_t> counts(N);
    for (int r = 0; r < N; ++r) counts[r] = 10 + 3 * r;
    const std::size_t total = std::accumulate(counts.begin(), counts.end(), std::size_t{0});
    std::vector<float> in2(total);
    for (std::size_t i = 0; i < total; ++i) in2[i] = value(R, i);
    DeviceBuffer b = on_gpu(in2),
                 out2(Device::cuda, DType::f32, {static_cast<std::int64_t>(counts[R])});
    comm_->reduce_scatter_sum(b.view().f32(), out2.view().f32(),
                              std::span<const std::size_t>(counts));
    got = on_host(out2);
    const std::size_t off = std::accumulate(counts.begin(), counts.begin() + R, std::size_t{0});
    for (std::size_t i = 0; i < counts[R]; ++i) {
        float want = 0;
        for (int r = 0; r < N; ++r) want += value(r, off + i);
        EXPECT_EQ(got[i], want) << i;
    }
}

TEST_F(NcclCommTest, AllGatherEvenAndUneven) {
    const std::size_t n = 33;
    std::vector<float> buf(n * N, -1.f);
    for (std::size_t i = 0; i < n; ++i) buf[R * n + i] = value(R, i);
    DeviceBuffer a = on_gpu(buf);
    comm_->all_gather(a.view().f32(), n);
    auto got = on_host(a);
    for (int r = 0; r < N; ++r)
        for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(got[r * n + i], value(r, i));
    std::vector<std::size_t> counts(N);
    for (int r = 0; r < N; ++r) counts[r] = 5 + r;
    const std::size_t total = std::accumulate(counts.begin(), counts.end(), std::size_t{0});
    std::vector<float> buf2(total, -1.f);
    const std::size_t off = std::accumulate(counts.begin(), counts.begin() + R, std::size_t{0});
    for (std::size_t i = 0; i < counts[R]; ++i) buf2[off + i] = value(R, i);
    DeviceBuffer b = on_gpu(buf2);
    comm_->all_gather(b.view().f32(), std::span<const std::size_t>(counts));
    got = on_host(b);
    std::size_t at = 0;
    for (int r = 0; r < N; ++r)
        for (std::size_t i = 0; i < counts[r]; ++i) EXPECT_EQ(got[at++], value(r, i));
}

TEST_F(NcclCommTest, BroadcastBarrierAndSplit) {
    DeviceBuffer b = on_gpu(std::vector<float>(100, R == N - 1 ? 3.5f : 0.f));
    comm_->broadcast(b.view().f32(), 100, N - 1);
    for (float x : on_host(b)) EXPECT_EQ(x, 3.5f);
    comm_->barrier();
    auto half = comm_->split(R % 2, R);
    DeviceBuffer c = on_gpu({1.f});
    half->all_reduce_sum(c.view().f32(), 1);
    EXPECT_EQ(on_host(c)[0], static_cast<float>(half->size()));
    EXPECT_EQ(half->size(), (N + 1 - R % 2) / 2);
}

}  // namespace
}  // namespace meshlm
