#include "mpi_main.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <memory>

#include "meshlm/parallel/world.h"

namespace meshlm::test {
namespace {

Comm* g_world = nullptr;

class FailurePrinter : public ::testing::EmptyTestEventListener {
  public:
    explicit FailurePrinter(int rank) : rank_(rank) {}
    void OnTestPartResult(const ::testing::TestPartResult& r) override {
        if (r.failed())
            std::fprintf(stderr, "[rank %d] %s:%d: %s\n", rank_, r.file_name() ? r.file_name() : "",
                         r.line_number(), r.summary());
    }

  private:
    int rank_;
};

}  // namespace

Comm& mpi_world() {
    return *g_world;
}

}  // namespace meshlm::test

int main(int argc, char** argv) {
    ::testing::InitGoogleTest(&argc, argv);
    meshlm::MpiGuard mpi;
    auto world = meshlm::make_world_comm(mpi);
    meshlm::test::g_world = world.get();
    if (world->rank() != 0) {
        auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
        delete listeners.Release(listeners.default_result_printer());
        listeners.Append(new meshlm::test::FailurePrinter(world->rank()));
    }
    return RUN_ALL_TESTS();
}
