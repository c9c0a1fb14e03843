// The single-process side of parallel/: LocalComm behaves as a world of one (copies or no-ops,
// no bytes), the traffic convention's formulas, the mesh's size checks, the tensor-parallel
// divisibility errors and the fault-injection hook. Multi-rank behaviour: tests/mpi/.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "meshlm/core/error.h"
#include "meshlm/parallel/fault.h"
#include "meshlm/parallel/local_comm.h"
#include "meshlm/parallel/mesh.h"
#include "meshlm/parallel/threads.h"
#include "meshlm/parallel/traffic.h"
#include "meshlm/parallel/world.h"

namespace meshlm {
namespace {

TEST(LocalComm, IsAWorldOfOne) {
    LocalComm c;
    EXPECT_EQ(c.rank(), 0);
    EXPECT_EQ(c.size(), 1);
    std::vector<float> buf = {1.5f, -2.0f, 3.0f};
    c.all_reduce_sum(buf.data(), buf.size());
    c.all_reduce_max(buf.data(), buf.size());
    c.all_gather(buf.data(), buf.size());
    c.broadcast(buf.data(), buf.size(), 0);
    c.iall_reduce_sum(buf.data(), buf.size()).wait();
    EXPECT_EQ(buf, (std::vector<float>{1.5f, -2.0f, 3.0f}));

    std::vector<float> out(3, 0.0f);
    c.reduce_scatter_sum(buf.data(), out.data(), 3);
    EXPECT_EQ(out, buf);
    std::vector<std::size_t> counts = {2};
    std::vector<float> out2(2, 0.0f);
    CommRequest r = c.ireduce_scatter_sum(buf.data(), out2.data(), counts);
    EXPECT_TRUE(r.test());
    EXPECT_EQ(out2, (std::vector<float>{1.5f, -2.0f}));
    c.barrier();
    EXPECT_EQ(c.bytes_sent(), 0u);
    EXPECT_THROW(c.broadcast(buf.data(), 1, 1), Error);  // no rank 1

    auto sub = c.split(3, 7);
    EXPECT_EQ(sub->size(), 1);
    EXPECT_EQ(sub->rank(), 0);
}

TEST(LocalComm, SingleProcessNeedsNoLauncher) {
    ASSERT_FALSE(launched_by_mpi());  // ctest runs this binary directly
    MpiGuard mpi;
    EXPECT_FALSE(mpi.active());
    auto world = make_world_comm(mpi);
    EXPECT_STREQ(world->backend(), "local");
    EXPECT_EQ(threads_per_rank(*world), affinity_cpus());
}

TEST(Traffic, EvenChunksCoverTheBuffer) {
    EXPECT_EQ(even_chunks(10, 4), (std::vector<std::size_t>{3, 3, 2, 2}));
    // Not compared with a {1, 1, 0, 0} literal: GCC 12.2 with AVX-512 (-march=native here)
    // miscompiles that constant into {1, 1, 1, 1}.
    const auto small = even_chunks(2, 4);
    ASSERT_EQ(small.size(), 4u);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(small[i], i < 2 ? 1u : 0u) << i;
    for (int i = 0; i < 4; ++i) {
        auto c = even_chunks(10, 4);
        EXPECT_EQ(even_offset(10, 4, i), std::accumulate(c.begin(), c.begin() + i, 0u));
    }
}

TEST(Traffic, RingFormulas) {
    // N = 4, n = 1024 floats: all-reduce 2n(N-1)/N, reduce-scatter and all-gather n(N-1)/N.
    for (int r = 0; r < 4; ++r) {
        EXPECT_EQ(traffic_all_reduce(1024, 4, r, 4), 2u * 768 * 4);
        std::vector<std::size_t> chunks(4, 256);
        EXPECT_EQ(traffic_reduce_scatter(chunks, r, 4), 768u * 4);
        EXPECT_EQ(traffic_all_gather(chunks, r, 4), 768u * 4);
    }
    // Uneven: summed over ranks, exactly the ring total 2 (N-1) n.
    std::uint64_t sum = 0;
    for (int r = 0; r < 4; ++r) sum += traffic_all_reduce(10, 4, r, 1);
    EXPECT_EQ(sum, 2u * 3 * 10);
    // Broadcast: everyone but the end of the chain from root forwards the buffer.
    EXPECT_EQ(traffic_broadcast(100, 4, 1, 2, 4), 0u);
    EXPECT_EQ(traffic_broadcast(100, 4, 2, 2, 4), 400u);
    EXPECT_EQ(traffic_broadcast(100, 4, 0, 2, 4), 400u);
    // One rank sends nothing.
    EXPECT_EQ(traffic_all_reduce(100, 1, 0, 4), 0u);
    EXPECT_EQ(traffic_broadcast(100, 1, 0, 0, 4), 0u);
}

TEST(Mesh, OneByOneOnASingleProcess) {
    LocalComm world;
    DeviceMesh mesh(world, 1, 1);
    EXPECT_EQ(mesh.data_index(), 0);
    EXPECT_EQ(mesh.model_index(), 0);
    EXPECT_EQ(mesh.data_comm().size(), 1);
    EXPECT_EQ(mesh.model_comm().size(), 1);
}

TEST(Mesh, WrongProductNamesBothSizesAndTheWorld) {
    LocalComm world;
    try {
        DeviceMesh mesh(world, 2, 2);
        FAIL() << "no error";
    } catch (const InvalidInput& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("parallel.data (2) x parallel.model (2) = 4"), std::string::npos) << msg;
        EXPECT_NE(msg.find("number of ranks (1)"), std::string::npos) << msg;
    }
    EXPECT_THROW(DeviceMesh(world, 0, 1), InvalidInput);
}

TEST(Mesh, ModelParallelShapesMustDivide) {
    // (model ranks, heads, key/value heads, MLP width); the vocabulary is padded, never refused.
    EXPECT_NO_THROW(check_model_parallel_shapes(4, 12, 12, 3072));
    EXPECT_NO_THROW(check_model_parallel_shapes(1, 3, 1, 7));
    try {
        check_model_parallel_shapes(4, 12, 2, 3072);
        FAIL() << "no error";
    } catch (const InvalidInput& e) {
        EXPECT_NE(std::string(e.what()).find("(model.n_kv_head, 0 = n_head) (2) must be divisible "
                                             "by parallel.model (4)"),
                  std::string::npos)
            << e.what();
    }
    EXPECT_THROW(check_model_parallel_shapes(8, 12, 12, 3072), InvalidInput);  // heads
    EXPECT_THROW(check_model_parallel_shapes(3, 3, 3, 512), InvalidInput);     // MLP width
}

TEST(Fault, ThrowsOnlyAtTheChosenRankAndPoint) {
    EXPECT_NO_THROW(fault_point(1, "train_step", 3));  // nothing asked
    setenv("MESHLM_FAULT_RANK", "1", 1);
    setenv("MESHLM_FAULT_AT", "train_step:3", 1);
    EXPECT_NO_THROW(fault_point(0, "train_step", 3));  // another rank
    EXPECT_NO_THROW(fault_point(1, "train_step", 2));  // another step
    EXPECT_NO_THROW(fault_point(1, "eval", 3));        // another point
    try {
        fault_point(1, "train_step", 3);
        FAIL() << "no fault";
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "injected fault at train_step:3 on rank 1");
    }
    setenv("MESHLM_FAULT_AT", "load", 1);
    EXPECT_THROW(fault_point(1, "load"), Error);  // a point without steps
    unsetenv("MESHLM_FAULT_RANK");
    unsetenv("MESHLM_FAULT_AT");
}

}  // namespace
}  // namespace meshlm
