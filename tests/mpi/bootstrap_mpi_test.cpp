// bootstrap_broadcast (parallel/bootstrap.h) on N ranks (mpirun -np 2 and -np 4): the step that
// hands NCCL's 128-byte ncclUniqueId from rank 0 to every rank, tested over MPI without a GPU.
// Assertions are EXPECT_*: a rank that returned early would skip collectives its peers enter.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "meshlm/core/error.h"
#include "meshlm/parallel/bootstrap.h"
#include "mpi_main.h"

namespace meshlm {
namespace {

constexpr std::size_t kIdBytes = 128;  // sizeof(ncclUniqueId)

std::uint8_t id_byte(std::size_t i) {
    return static_cast<std::uint8_t>(i * 37 + 11);
}

TEST(BootstrapMpi, EveryRankGetsRankZerosId) {
    Comm& world = test::mpi_world();
    std::vector<std::uint8_t> blob(kIdBytes, 0xEE);
    if (world.rank() == 0)
        for (std::size_t i = 0; i < kIdBytes; ++i) blob[i] = id_byte(i);
    bootstrap_broadcast(world, blob);
    for (std::size_t i = 0; i < kIdBytes; ++i)
        EXPECT_EQ(blob[i], id_byte(i)) << "rank " << world.rank() << " byte " << i;
}

TEST(BootstrapMpi, AnotherRootAndASubCommunicator) {
    Comm& world = test::mpi_world();
    auto pair = world.split(world.rank() / 2, world.rank());  // ranks {0, 1}, {2, 3}, ...
    std::vector<std::uint8_t> blob(kIdBytes, 0);
    const int root = pair->size() - 1;
    if (pair->rank() == root)
        for (std::size_t i = 0; i < kIdBytes; ++i) blob[i] = id_byte(i + world.rank());
    bootstrap_broadcast(*pair, blob, root);
    const int root_world_rank = world.rank() - pair->rank() + root;
    for (std::size_t i = 0; i < kIdBytes; ++i)
        EXPECT_EQ(blob[i], id_byte(i + root_world_rank)) << "rank " << world.rank();
}

TEST(BootstrapMpi, SizeMismatchIsAnErrorOnEveryRank) {
    Comm& world = test::mpi_world();
    std::vector<std::uint8_t> blob(kIdBytes + (world.rank() == 1 ? 8 : 0), 1);
    try {
        bootstrap_broadcast(world, blob);
        ADD_FAILURE() << "rank " << world.rank() << ": no error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("ranks pass blobs of 128 to 136 bytes"),
                  std::string::npos)
            << e.what();
    }
    // Still in step: a normal broadcast works after the refusal.
    std::vector<std::uint8_t> ok(kIdBytes, world.rank() == 0 ? 7 : 0);
    bootstrap_broadcast(world, ok);
    EXPECT_EQ(ok[kIdBytes - 1], 7);
}

}  // namespace
}  // namespace meshlm
