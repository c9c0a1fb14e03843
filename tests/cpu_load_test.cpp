// What commands see of the machine's other work (core/cpu_load.h, core/threads.h): the parsers
// of /proc/stat and cgroup cpu.max, and the thread choice of sample / eval / serve beside a
// process that keeps a core busy.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sstream>

#include "meshlm/core/cpu_load.h"
#include "meshlm/core/threads.h"
#include "test_util.h"

namespace meshlm {
namespace {

TEST(CpuLoad, ProcsRunningIsReadFromItsOwnLine) {
    EXPECT_EQ(parse_procs_running("cpu  1 2 3\nctxt 9\nprocs_running 3\nprocs_blocked 0\n"), 3);
    EXPECT_EQ(parse_procs_running("procs_running 12\n"), 12);
    // Only a line that starts with the key counts, and it must hold a number.
    EXPECT_EQ(parse_procs_running("xprocs_running 5\n"), -1);
    EXPECT_EQ(parse_procs_running("procs_running x\n"), -1);
    EXPECT_EQ(parse_procs_running(""), -1);
}

TEST(CpuLoad, CgroupQuotaRoundsUpToWholeCpus) {
    EXPECT_EQ(parse_cpu_quota("max 100000\n"), 0);
    EXPECT_EQ(parse_cpu_quota("200000 100000\n"), 2);
    EXPECT_EQ(parse_cpu_quota("150000 100000\n"), 2);
    EXPECT_EQ(parse_cpu_quota("50000 100000\n"), 1);
    EXPECT_EQ(parse_cpu_quota(""), 0);
    EXPECT_EQ(parse_cpu_quota("100000"), 0);  // no period
    EXPECT_EQ(parse_cpu_quota("-5 100000"), 0);
}

TEST(CpuLoad, AvailableCpusIsWithinTheAffinityMask) {
    EXPECT_GE(available_cpus(), 1);
    EXPECT_LE(available_cpus(), affinity_cpus());
}

// A child that spins keeps one core busy for as long as it lives.
struct Spinner {
    pid_t pid = fork();
    Spinner() {
        if (pid == 0)
            for (;;) {
            }
    }
    ~Spinner() {
        kill(pid, SIGKILL);
        waitpid(pid, nullptr, 0);
    }
};

TEST(CpuLoad, ABusyProcessIsSeenAndLeftItsCore) {
    Spinner spinner;
    ASSERT_GT(spinner.pid, 0);
    usleep(20000);  // until it runs
    EXPECT_GE(busy_cpus_elsewhere(), 1);
    std::ostringstream note;
    const int cpus = available_cpus();
    const int threads = use_inference_threads(0, note);
    EXPECT_EQ(thread_count(), threads);
    if (cpus == 1) {
        EXPECT_EQ(threads, 1);
    } else {
        // Other tests may run beside this one too: at most every CPU but the spinner's.
        EXPECT_GE(threads, 1);
        EXPECT_LE(threads, cpus - 1);
        EXPECT_NE(note.str().find("CPUs busy with other processes; using"), std::string::npos)
            << note.str();
    }
}

TEST(CpuLoad, AnExplicitThreadCountIsKept) {
    Spinner spinner;
    std::ostringstream note;
    EXPECT_EQ(use_inference_threads(3, note), 3);
    EXPECT_EQ(thread_count(), 3);
    EXPECT_EQ(note.str(), "");
}

// Training keeps every CPU (its losses depend on the thread count) and says so, naming the
// setting that would leave the busy one alone.
TEST(CpuLoad, TrainingKeepsEveryCpuAndSaysSo) {
    if (available_cpus() < 2) GTEST_SKIP() << "one CPU: nothing to leave to others";
    Spinner spinner;
    usleep(20000);
    const std::string dir = test::temp_dir("cpu_load_train");
    const auto r = test::run_command(
        test::meshlm_binary() + " train --config " + test::source_dir() +
        "/configs/tiny-gpt2.yaml --config.model.n_layer=1 --config.model.d_model=32"
        " --config.model.n_head=2 --config.train.steps=1 --config.train.batch_size=2"
        " --config.train.final_eval_batches=1 --config.log.sample_tokens=0"
        " --config.train.peak_gflops=100 --config.log.dir=" +
        dir + "/run");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const std::string cpus = std::to_string(available_cpus());
    EXPECT_NE(r.output.find("CPUs busy with other processes; training keeps " + cpus + " threads"),
              std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("--config.train.threads="), std::string::npos) << r.output;
}

}  // namespace
}  // namespace meshlm
