// Watching a run through `meshlm train`, on one process and on 2 MPI ranks: log.profile_steps'
// merged trace parses, every event nests in its parent on its thread, blocks sit inside the
// forward and backward, the children of a step add up to most of it; log.diag_interval's
// diagnostics reach metrics.jsonl; and neither changes a bit of the training.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "test_util.h"
#include "train_runs.h"

namespace meshlm {
namespace {

constexpr int kSteps = 6;

std::string flags(const std::string& dir, int batch, int accum, int checkpoint_interval = 0) {
    return test::tiny_flags(dir, kSteps, batch, accum, checkpoint_interval);
}

test::TrainedRun train(int np, const std::string& dir, const std::string& args) {
    return test::train_run(np, dir, args, test::tiny_model());
}

struct Event {
    std::string name;
    double ts, end;
    int pid, tid;
    nlohmann::json args;
    int parent = -1;  // index of the innermost event holding it on its thread
};

// The "X" events of a trace, each with its parent; fails the test where two events of one
// thread overlap without one holding the other.
std::vector<Event> nested_events(const nlohmann::json& trace) {
    std::vector<Event> ev;
    for (const auto& e : trace.at("traceEvents"))
        if (e.at("ph") == "X")
            ev.push_back({e.at("name"), e.at("ts"), double(e.at("ts")) + double(e.at("dur")),
                          e.at("pid"), e.at("tid"), e.value("args", nlohmann::json::object())});
    std::vector<int> order(ev.size());
    for (std::size_t i = 0; i < ev.size(); ++i) order[i] = static_cast<int>(i);
    std::sort(order.begin(), order.end(), [&](int a, int b) {
        const Event &x = ev[a], &y = ev[b];
        if (x.pid != y.pid || x.tid != y.tid)
            return std::tie(x.pid, x.tid) < std::tie(y.pid, y.tid);
        return x.ts != y.ts ? x.ts < y.ts : x.end > y.end;  // a parent before its first child
    });
    const double tol = 1e-3;  // microseconds: the files keep nanoseconds
    std::vector<int> stack;
    for (std::size_t k = 0; k < order.size(); ++k) {
        Event& e = ev[order[k]];
        if (k > 0 && (ev[order[k - 1]].pid != e.pid || ev[order[k - 1]].tid != e.tid))
            stack.clear();
        while (!stack.empty() && ev[stack.back()].end <= e.ts + tol) stack.pop_back();
        if (!stack.empty()) {
            EXPECT_LE(e.end, ev[stack.back()].end + tol)
                << e.name << " overlaps " << ev[stack.back()].name << " without nesting in it";
            e.parent = stack.back();
        }
        stack.push_back(order[k]);
    }
    return ev;
}

// Checks the merged trace of steps [3, 4] (a checkpoint written at step 4) of `ranks` ranks.
void check_trace(const std::string& dir, int ranks) {
    for (int r = 0; r < ranks; ++r)
        EXPECT_TRUE(std::filesystem::exists(dir + "/trace/rank_" + std::to_string(r) + ".json"));
    const auto ev = nested_events(nlohmann::json::parse(test::read_file(dir + "/trace.json")));
    std::map<int, std::set<std::string>> steps;    // per rank
    std::map<std::string, int> names;              // counts, all ranks
    std::map<int, double> covered, total;          // step event -> its children's time
    std::map<int, std::set<std::string>> updated;  // per rank: the blocks the optimizer updated
    for (std::size_t i = 0; i < ev.size(); ++i) {
        const Event& e = ev[i];
        ++names[e.name.substr(0, e.name.find_last_not_of("0123456789 ") + 1)];  // no number
        const std::string parent = e.parent >= 0 ? ev[e.parent].name : "";
        if (e.name.starts_with("step ")) {
            EXPECT_EQ(e.parent, -1) << e.name;
            EXPECT_EQ(e.tid, 0);
            steps[e.pid].insert(e.name);
            total[static_cast<int>(i)] = e.end - e.ts;
            continue;
        }
        // Everything happens within a step of its rank.
        int top = static_cast<int>(i);
        while (ev[top].parent >= 0) top = ev[top].parent;
        EXPECT_TRUE(ev[top].name.starts_with("step ")) << e.name << " outside a step";
        if (e.parent >= 0 && ev[e.parent].name.starts_with("step "))
            covered[e.parent] += e.end - e.ts;
        if (e.name.starts_with("forward block")) EXPECT_EQ(parent, "forward") << e.name;
        if (e.name.starts_with("backward block")) EXPECT_EQ(parent, "backward") << e.name;
        if (e.name.starts_with("optimizer ")) EXPECT_EQ(parent, "optimizer") << e.name;
        if (e.name.starts_with("optimizer block")) updated[e.pid].insert(e.name);
        if (e.name == "all_reduce" || e.name == "all_gather" || e.name == "reduce_scatter")
            EXPECT_GE(e.args.value("bytes", -1), 0) << e.name << " carries its bytes";
    }
    for (int r = 0; r < ranks; ++r)
        EXPECT_EQ(steps[r], (std::set<std::string>{"step 3", "step 4"})) << "rank " << r;
    // Per step and rank: 2 micro-batches (data, forward, backward) and 2 blocks each way.
    const int per = 2 * 2 * ranks;
    EXPECT_EQ(names["step"], 2 * ranks);
    EXPECT_EQ(names["forward"], per);
    EXPECT_EQ(names["backward"], per);
    EXPECT_EQ(names["forward block"], 2 * per);
    EXPECT_EQ(names["backward block"], 2 * per);
    EXPECT_EQ(names["data"], per);
    EXPECT_EQ(names["gradient norm"], 2 * ranks);
    EXPECT_EQ(names["optimizer"], 2 * ranks);
    // AdamW per block (its groups split at block boundaries), the rest outside the blocks.
    EXPECT_GE(names["optimizer block"], 2 * 2 * ranks);
    EXPECT_GE(names["optimizer embeddings and head"], 2 * ranks);
    for (int r = 0; r < ranks; ++r)
        EXPECT_EQ(updated[r], (std::set<std::string>{"optimizer block 0", "optimizer block 1"}))
            << "rank " << r;
    EXPECT_EQ(names["checkpoint write"], ranks);
    if (ranks > 1) EXPECT_GT(names["all_reduce"], 0);
    for (const auto& [step, t] : total) {
        const double f = covered[step] / t;
        std::printf("rank %d %s: %.1f us, children %.1f %%\n", ev[step].pid, ev[step].name.c_str(),
                    t, 100 * f);
        EXPECT_LE(covered[step], t + 1e-3);
        EXPECT_GE(f, 0.8) << ev[step].name << " of rank " << ev[step].pid;
    }
}

// Wider than the other runs' (d_model 32, a step of 0.4 ms): the metrics line each step writes
// outside any event (about 30 us) stays a few percent of a step.
const char* const kTraced = " --config.model.d_model=128 --config.log.profile_steps=[3,4]";

TEST(ObserveTrain, TraceOfOneProcess) {
    const std::string dir = test::temp_dir("trace1");
    const auto r = test::run_train(1, flags(dir, 2, 2, 4) + kTraced);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("trace of steps 3-4"), std::string::npos) << r.output;
    check_trace(dir, 1);
}

TEST(ObserveTrain, TraceOfTwoRanks) {
    const std::string dir = test::temp_dir("trace2");
    const auto r = test::run_train(2, flags(dir, 1, 2, 4) + test::mesh_flags(2, 1, 0) + kTraced);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    check_trace(dir, 2);
}

// A run with diagnostics every 2 steps (and tracing) against the same run without: the same
// losses and weights to the bit; the diagnostics in metrics.jsonl at steps 2, 4, 6.
// Returns the diagnostics run's records.
std::vector<nlohmann::json> check_diagnostics(int np, const std::string& mesh, int batch,
                                              int accum) {
    const std::string dir = test::temp_dir("diag");
    const auto plain = train(np, dir + "/plain", flags(dir + "/plain", batch, accum) + mesh);
    const auto watched =
        train(np, dir + "/diag",
              flags(dir + "/diag", batch, accum) + mesh +
                  " --config.log.diag_interval=2 --config.log.profile_steps=[2,3]");
    EXPECT_EQ(plain.steps.size(), watched.steps.size());
    if (plain.steps.size() != watched.steps.size()) return {};
    for (std::size_t s = 0; s < plain.steps.size(); ++s) {
        EXPECT_EQ(plain.steps[s]["loss"].dump(), watched.steps[s]["loss"].dump()) << "step " << s;
        EXPECT_EQ(plain.steps[s]["grad_norm"].dump(), watched.steps[s]["grad_norm"].dump());
    }
    EXPECT_EQ(plain.weights.size(), watched.weights.size());
    if (plain.weights.size() != watched.weights.size()) return {};
    EXPECT_EQ(std::memcmp(plain.weights.data(), watched.weights.data(),
                          plain.weights.size() * sizeof(float)),
              0)
        << "the final weights differ";
    for (const auto& m : watched.steps) {
        const bool due = int(m["step"]) % 2 == 0;
        EXPECT_EQ(m.contains("act_rms"), due) << m.dump();
        EXPECT_EQ(m.contains("gns"), due) << m.dump();
        if (!due) continue;
        EXPECT_EQ(m["act_rms"].size(), 2u);
        EXPECT_GT(double(m["act_rms"]["h.1"]), 0.0);
        EXPECT_GT(double(m["update_ratio"]["h.0.attn.c_attn.weight"]), 0.0) << m.dump();
        EXPECT_TRUE(m.contains("gns_grad_sq") && m.contains("gns_noise"));
        // tr(Sigma) >= 0 in expectation and far above the noise of its estimate here: random
        // tokens make every example's gradient mostly noise.
        EXPECT_GT(double(m["gns_noise"]), 0.0) << m.dump();
        std::printf("step %d: B_simple %.1f tokens, |G|^2 %.3g, tr(Sigma) %.3g\n", int(m["step"]),
                    double(m["gns"]), double(m["gns_grad_sq"]), double(m["gns_noise"]));
    }
    return watched.steps;
}

// The same rows either way: 1 process with 2 micro-batches of 2 rows, 2 ranks of 2 rows (the
// synthetic batch is drawn whole, rows in order), so B_small = 32 and B_big = 64 tokens in both.
// The small batch differs (the first micro-batch; the mean over both ranks' own), so the noise
// estimates agree only roughly; twice or half would mean a gradient counted twice or half.
TEST(ObserveTrain, DiagnosticsWithAccumulationAndOnTwoDataRanksLeaveTrainingBitwiseTheSame) {
    const auto accum = check_diagnostics(1, "", 2, 2);
    const auto dp = check_diagnostics(2, test::mesh_flags(2, 1, 0), 2, 1);
    ASSERT_EQ(accum.size(), std::size_t(kSteps));
    ASSERT_EQ(dp.size(), std::size_t(kSteps));
    const double a = accum[1]["gns_noise"], b = dp[1]["gns_noise"];
    EXPECT_NEAR(b / a, 1.0, 0.25) << "tr(Sigma) at step 2: " << a << " (accumulation), " << b
                                  << " (2 ranks)";
}

TEST(ObserveTrain, OneProcessWithoutAccumulationSaysTheNoiseScaleIsNotAvailable) {
    const std::string dir = test::temp_dir("diag1");
    const auto run = train(1, dir, flags(dir, 2, 1) + " --config.log.diag_interval=3");
    EXPECT_NE(run.output.find("no gradient noise scale, one process without gradient "
                              "accumulation"),
              std::string::npos)
        << run.output;
    for (const auto& m : run.steps) {
        EXPECT_FALSE(m.contains("gns"));
        EXPECT_EQ(m.contains("act_rms"), int(m["step"]) % 3 == 0);
    }
}

}  // namespace
}  // namespace meshlm
