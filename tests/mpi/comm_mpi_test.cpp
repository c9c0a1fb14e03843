// Every collective of MpiComm on N ranks (run under mpirun -np 2 and -np 4): each rank fills
// its input from a known formula of (rank, index), so every rank can compute the expected
// result locally. Byte counters are checked against the convention of parallel/traffic.h.
// Assertions are EXPECT_*: a rank that returned early would skip collectives its peers enter.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

#include "meshlm/core/error.h"
#include "meshlm/parallel/mesh.h"
#include "meshlm/parallel/mpi_comm.h"
#include "meshlm/parallel/threads.h"
#include "mpi_main.h"

namespace meshlm {
namespace {

class CommMpi : public ::testing::Test {
  protected:
    void SetUp() override {
        world().reset_bytes_sent();
        N = world().size();
        R = world().rank();
    }
    static Comm& world() { return test::mpi_world(); }
    int N = 0, R = 0;
};

// Small integers: float sums over ranks are exact.
float value(int rank, std::size_t i) {
    return static_cast<float>((rank + 1) * static_cast<int>(i % 17) + static_cast<int>(i % 5));
}
float sum_over_ranks(int n_ranks, std::size_t i) {
    float s = 0;
    for (int r = 0; r < n_ranks; ++r) s += value(r, i);
    return s;
}

TEST_F(CommMpi, WorldMatchesLauncher) {
    EXPECT_STREQ(world().backend(), "mpi");
    EXPECT_EQ(N, std::atoi(std::getenv("OMPI_COMM_WORLD_SIZE")));
    EXPECT_EQ(R, std::atoi(std::getenv("OMPI_COMM_WORLD_RANK")));
    EXPECT_GE(N, 2);
}

TEST_F(CommMpi, AllReduceSumFloat) {
    for (std::size_t n : {std::size_t{1003}, std::size_t{1024}, std::size_t{1}, std::size_t{0}}) {
        world().reset_bytes_sent();
        std::vector<float> buf(n);
        for (std::size_t i = 0; i < n; ++i) buf[i] = value(R, i);
        world().all_reduce_sum(buf.data(), n);
        for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(buf[i], sum_over_ranks(N, i)) << i;
        // 2 (n - own chunk) elements; own chunk = n/N, +1 for the first n % N ranks.
        const std::size_t own = n / N + (static_cast<std::size_t>(R) < n % N ? 1 : 0);
        EXPECT_EQ(world().bytes_sent(), 2 * (n - own) * 4) << n;
        EXPECT_EQ(world().bytes_sent(CommOp::all_reduce), world().bytes_sent());
    }
    // The textbook formula when N divides n: 2 n (N - 1) / N elements.
    world().reset_bytes_sent();
    std::vector<float> even(1024, 1.0f);
    world().all_reduce_sum(even.data(), even.size());
    EXPECT_EQ(world().bytes_sent(), 2u * 1024 * (N - 1) / N * 4);
}

TEST_F(CommMpi, AllReduceOtherTypesAndOps) {
    std::vector<std::int64_t> i64 = {R, std::int64_t{1} << 40, -R};
    world().all_reduce_sum(i64.data(), i64.size());
    EXPECT_EQ(i64[0], N * (N - 1) / 2);
    EXPECT_EQ(i64[1], N * (std::int64_t{1} << 40));
    EXPECT_EQ(i64[2], -N * (N - 1) / 2);

    std::vector<double> f64 = {0.25 * R, 1e300};
    world().all_reduce_max(f64.data(), f64.size());
    EXPECT_EQ(f64[0], 0.25 * (N - 1));
    EXPECT_EQ(f64[1], 1e300);

    std::vector<std::int32_t> i32 = {10 - R, R};
    world().all_reduce_min(i32.data(), i32.size());
    EXPECT_EQ(i32[0], 10 - (N - 1));
    EXPECT_EQ(i32[1], 0);
}

TEST_F(CommMpi, NonBlockingAllReduceOverlaps) {
    // Two operations in flight at once, completed in the opposite order.
    std::vector<float> a(777), b(100);
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = value(R, i);
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = value(R, i + 3);
    CommRequest ra = world().iall_reduce_sum(a.data(), a.size());
    CommRequest rb = world().iall_reduce_sum(b.data(), b.size());
    EXPECT_FALSE(ra.done());
    rb.wait();
    while (!ra.test()) {
    }
    EXPECT_TRUE(ra.done());
    for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i], sum_over_ranks(N, i));
    for (std::size_t i = 0; i < b.size(); ++i) EXPECT_EQ(b[i], sum_over_ranks(N, i + 3));
}

TEST_F(CommMpi, ReduceScatterEven) {
    const std::size_t n = 37;
    for (bool async : {false, true}) {
        world().reset_bytes_sent();
        std::vector<float> in(n * N), out(n, -1.0f);
        for (std::size_t i = 0; i < in.size(); ++i) in[i] = value(R, i);
        if (async)
            world().ireduce_scatter_sum(in.data(), out.data(), n).wait();
        else
            world().reduce_scatter_sum(in.data(), out.data(), n);
        for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(out[i], sum_over_ranks(N, R * n + i)) << i;
        EXPECT_EQ(world().bytes_sent(), n * (N - 1) * 4);  // n(N-1)/N of the n*N input
        EXPECT_EQ(world().bytes_sent(CommOp::reduce_scatter), world().bytes_sent());
    }
}

// Uneven chunks, one of them empty: rank r gets counts[r] elements.
std::vector<std::size_t> uneven_counts(int n_ranks) {
    std::vector<std::size_t> counts(n_ranks);
    for (int r = 0; r < n_ranks; ++r) counts[r] = r == 1 ? 0 : 5 + 3 * r;
    return counts;
}

TEST_F(CommMpi, ReduceScatterUneven) {
    const auto counts = uneven_counts(N);
    const std::size_t total = std::accumulate(counts.begin(), counts.end(), std::size_t{0});
    const std::size_t offset = std::accumulate(counts.begin(), counts.begin() + R, std::size_t{0});
    for (bool async : {false, true}) {
        world().reset_bytes_sent();
        std::vector<float> in(total), out(counts[R] + 1, -1.0f);
        for (std::size_t i = 0; i < total; ++i) in[i] = value(R, i);
        if (async)
            world().ireduce_scatter_sum(in.data(), out.data(), counts).wait();
        else
            world().reduce_scatter_sum(in.data(), out.data(), counts);
        for (std::size_t i = 0; i < counts[R]; ++i)
            EXPECT_EQ(out[i], sum_over_ranks(N, offset + i)) << i;
        EXPECT_EQ(out[counts[R]], -1.0f);  // nothing written past this rank's chunk
        EXPECT_EQ(world().bytes_sent(), (total - counts[R]) * 4);
    }
}

TEST_F(CommMpi, AllGatherEven) {
    const std::size_t n = 41;
    for (bool async : {false, true}) {
        world().reset_bytes_sent();
        std::vector<float> buf(n * N, -1.0f);
        for (std::size_t i = 0; i < n; ++i) buf[R * n + i] = value(R, i);
        if (async)
            world().iall_gather(buf.data(), n).wait();
        else
            world().all_gather(buf.data(), n);
        for (int r = 0; r < N; ++r)
            for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(buf[r * n + i], value(r, i));
        EXPECT_EQ(world().bytes_sent(), n * (N - 1) * 4);
        EXPECT_EQ(world().bytes_sent(CommOp::all_gather), world().bytes_sent());
    }
}

TEST_F(CommMpi, AllGatherUneven) {
    const auto counts = uneven_counts(N);
    const std::size_t total = std::accumulate(counts.begin(), counts.end(), std::size_t{0});
    for (bool async : {false, true}) {
        world().reset_bytes_sent();
        std::vector<std::int64_t> buf(total, -1);
        std::size_t at = 0;
        for (int r = 0; r < N; at += counts[r], ++r)
            if (r == R)
                for (std::size_t i = 0; i < counts[r]; ++i) buf[at + i] = 1000 * r + i;
        if (async)
            world().iall_gather(buf.data(), counts).wait();
        else
            world().all_gather(buf.data(), counts);
        at = 0;
        for (int r = 0; r < N; at += counts[r], ++r)
            for (std::size_t i = 0; i < counts[r]; ++i)
                EXPECT_EQ(buf[at + i], static_cast<std::int64_t>(1000 * r + i));
        EXPECT_EQ(world().bytes_sent(), (total - counts[R]) * 8);
    }
}

TEST_F(CommMpi, BroadcastFromEveryRoot) {
    for (int root = 0; root < N; ++root) {
        world().reset_bytes_sent();
        std::vector<float> buf(300, -1.0f);
        if (R == root)
            for (std::size_t i = 0; i < buf.size(); ++i) buf[i] = value(root, i);
        if (root % 2)
            world().ibroadcast(buf.data(), buf.size(), root).wait();
        else
            world().broadcast(buf.data(), buf.size(), root);
        for (std::size_t i = 0; i < buf.size(); ++i) EXPECT_EQ(buf[i], value(root, i));
        // Pipeline chain root, root+1, ...: the last rank, root-1, forwards nothing.
        const bool last = R == (root + N - 1) % N;
        EXPECT_EQ(world().bytes_sent(), last ? 0u : 300u * 4);
    }
    // Bytes of a struct, e.g. a step counter and a seed from rank 0.
    struct State {
        std::int64_t step;
        double loss;
    } st{R == 0 ? 1234 : -1, R == 0 ? 2.5 : 0.0};
    world().broadcast_bytes(&st, sizeof st, 0);
    EXPECT_EQ(st.step, 1234);
    EXPECT_EQ(st.loss, 2.5);
}

TEST_F(CommMpi, BarrierAndBadArguments) {
    world().barrier();
    float x = 0;
    EXPECT_THROW(world().broadcast(&x, 1, N), Error);  // root out of range: local check
    std::vector<std::size_t> wrong(N + 1, 1);
    std::vector<float> buf(N + 1);
    EXPECT_THROW(world().all_gather(buf.data(), wrong), Error);
    std::vector<float> in(4 * N);
    EXPECT_THROW(world().reduce_scatter_sum(in.data(), in.data() + 1, 4), Error);  // overlap
    EXPECT_EQ(world().bytes_sent(), 0u);
}

TEST_F(CommMpi, SplitOrdersByKeyAndReducesWithinGroup) {
    // Two groups by parity, each ordered by descending world rank.
    auto sub = world().split(R % 2, -R);
    std::vector<int> members;
    for (int r = R % 2; r < N; r += 2) members.push_back(r);
    EXPECT_EQ(sub->size(), static_cast<int>(members.size()));
    EXPECT_EQ(sub->rank(), static_cast<int>(members.size()) - 1 - (R / 2));
    std::vector<std::int32_t> x = {R, 1};
    sub->all_reduce_sum(x.data(), x.size());
    EXPECT_EQ(x[0], std::accumulate(members.begin(), members.end(), 0));
    EXPECT_EQ(x[1], static_cast<int>(members.size()));
    // Sub-communicators count their own bytes.
    EXPECT_EQ(world().bytes_sent(), 0u);
    const std::size_t own = 2 / sub->size() + (sub->rank() < 2 % sub->size() ? 1 : 0);
    EXPECT_EQ(sub->bytes_sent(), 2 * (2 - own) * 4);
}

TEST_F(CommMpi, MeshAxesAndSubCommunicators) {
    // Every factorization of N into data x model.
    for (int model = 1; model <= N; ++model) {
        if (N % model) continue;
        const int data = N / model;
        DeviceMesh mesh(world(), data, model);
        EXPECT_EQ(mesh.data_index(), R / model);
        EXPECT_EQ(mesh.model_index(), R % model);
        EXPECT_EQ(DeviceMesh::rank_of(mesh.data_index(), mesh.model_index(), model), R);
        EXPECT_EQ(mesh.model_comm().size(), model);
        EXPECT_EQ(mesh.data_comm().size(), data);
        EXPECT_EQ(mesh.model_comm().rank(), mesh.model_index());
        EXPECT_EQ(mesh.data_comm().rank(), mesh.data_index());
        // Model group: the adjacent ranks data_index*model + [0, model).
        std::vector<std::int64_t> ranks(model, -1);
        ranks[mesh.model_index()] = R;
        mesh.model_comm().all_gather(ranks.data(), 1);
        for (int m = 0; m < model; ++m) EXPECT_EQ(ranks[m], mesh.data_index() * model + m);
        // Data group: the ranks with the same model index, model apart.
        std::vector<std::int64_t> dranks(data, -1);
        dranks[mesh.data_index()] = R;
        mesh.data_comm().all_gather(dranks.data(), 1);
        for (int d = 0; d < data; ++d) EXPECT_EQ(dranks[d], d * model + mesh.model_index());
        EXPECT_GT(mesh.bytes_sent(), 0u);
        mesh.reset_bytes_sent();
        EXPECT_EQ(mesh.bytes_sent(), 0u);
    }
}

TEST_F(CommMpi, MeshRejectsAWrongProduct) {
    try {
        DeviceMesh mesh(world(), N + 1, 1);
        ADD_FAILURE() << "no error";
    } catch (const InvalidInput& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("parallel.data (" + std::to_string(N + 1) + ")"), std::string::npos)
            << msg;
        EXPECT_NE(msg.find("parallel.model (1)"), std::string::npos) << msg;
        EXPECT_NE(msg.find("number of ranks (" + std::to_string(N) + ")"), std::string::npos)
            << msg;
    }
}

TEST_F(CommMpi, ThreadsPerRankShareTheHost) {
    const int t = threads_per_rank(world());
    EXPECT_GE(t, 1);
    EXPECT_LE(t, affinity_cpus());
    // All ranks run on this host (the tests launch them so): together they never ask for more
    // threads than the host has CPUs, or one each when there are more ranks than CPUs.
    std::int64_t total = t;
    world().all_reduce_sum(&total, 1);
    const std::int64_t host_cpus = sysconf(_SC_NPROCESSORS_ONLN);
    EXPECT_LE(total, std::max<std::int64_t>(N, host_cpus)) << "this rank: " << t;
}

}  // namespace
}  // namespace meshlm
