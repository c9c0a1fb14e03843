// One failing rank ends the whole job: every rank exits non-zero, within a bounded time (the
// `timeout` wrapper: nothing hangs), and the error is printed exactly once.
#include <gtest/gtest.h>

#include <string>

#include "test_util.h"

namespace meshlm {
namespace {

int count_of(const std::string& text, const std::string& what) {
    int n = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
}

// Runs fault_main on `np` ranks with `env` set, killed after 120 s if it hangs.
test::CommandResult run_job(int np, const std::string& env, const std::string& args = "") {
    return test::run_command("env " + env + " timeout -s KILL 120 " + MESHLM_MPIRUN + " -np " +
                             std::to_string(np) + " " + MESHLM_FAULT_MAIN + " " + args);
}

TEST(CommFault, HealthyJobCompletes) {
    auto r = run_job(2, "MESHLM_COMM_TIMEOUT=60");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(count_of(r.output, "all steps done on 2 ranks"), 1) << r.output;
}

TEST(CommFault, ThrowOnRank1EndsEveryRank) {
    for (int np : {2, 4}) {
        auto r = run_job(np, "MESHLM_COMM_TIMEOUT=60 MESHLM_FAULT_RANK=1 MESHLM_FAULT_AT=step:3");
        EXPECT_NE(r.exit_code, 0) << r.output;
        EXPECT_NE(r.exit_code, 137) << "killed by the timeout: the job hung\n" << r.output;
        EXPECT_EQ(count_of(r.output, "injected fault at step:3 on rank 1"), 1) << r.output;
        EXPECT_EQ(count_of(r.output, "error: rank 1/" + std::to_string(np)), 1) << r.output;
        EXPECT_EQ(count_of(r.output, "all steps done"), 0) << r.output;
    }
}

// Every rank hits the same error (as with a bad config): reported once, by rank 0.
TEST(CommFault, AnErrorOfEveryRankIsPrintedOnce) {
    auto r = run_job(4, "MESHLM_COMM_TIMEOUT=60 MESHLM_FAULT_RANK=all MESHLM_FAULT_AT=step:2",
                     "--alike");
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_NE(r.exit_code, 137) << "killed by the timeout: the job hung\n" << r.output;
    EXPECT_EQ(count_of(r.output, "error: rank 0/4: injected fault at step:2 on rank 0"), 1)
        << r.output;
    EXPECT_EQ(count_of(r.output, "injected fault"), 1) << r.output;
}

// Reported as possibly shared but raised by rank 1 alone: still printed, once, by rank 1.
TEST(CommFault, AnErrorThoughtSharedButOfOneRankIsStillPrinted) {
    auto r =
        run_job(2, "MESHLM_COMM_TIMEOUT=60 MESHLM_FAULT_RANK=1 MESHLM_FAULT_AT=step:2", "--alike");
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_NE(r.exit_code, 137) << "killed by the timeout: the job hung\n" << r.output;
    EXPECT_EQ(count_of(r.output, "error: rank 1/2: injected fault at step:2 on rank 1"), 1)
        << r.output;
}

// A rank that hangs (no exception) is caught by its peer's collective timeout, which then
// aborts the job the same way.
TEST(CommFault, HangOnRank1TimesOutOnItsPeer) {
    auto r = run_job(2,
                     "MESHLM_COMM_TIMEOUT=2 MESHLM_FAULT_RANK=1 MESHLM_FAULT_AT=step:2 "
                     "MESHLM_FAULT_KIND=hang");
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_NE(r.exit_code, 137) << "killed by the timeout: the job hung\n" << r.output;
    EXPECT_EQ(count_of(r.output, "error: rank 0/2: all_reduce did not complete within 2 s"), 1)
        << r.output;
    EXPECT_EQ(count_of(r.output, "all steps done"), 0) << r.output;
}

}  // namespace
}  // namespace meshlm
