// The trace recorder (core/trace.h): nothing recorded while off, nested scopes on each thread,
// the Chrome trace JSON of what was recorded; and log.profile_steps as the config reads it.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <thread>

#include "meshlm/cli/config.h"
#include "meshlm/core/error.h"
#include "meshlm/core/trace.h"
#include "test_util.h"

namespace meshlm {
namespace {

TEST(Trace, RecordsNestedScopesOnlyWhileOn) {
    trace_clear();
    { TraceScope off("off"); }
    trace_set_enabled(true);
    {
        TraceScope outer("outer");
        TraceScope inner("block", 3, 4096);
        std::thread([] { TraceScope t("worker"); }).join();
    }
    trace_set_enabled(false);
    { TraceScope after("after"); }
    const auto ev = trace_events();
    ASSERT_EQ(ev.size(), 3u);
    // By thread, then in the order the scopes closed.
    EXPECT_STREQ(ev[0].name, "block");
    EXPECT_STREQ(ev[1].name, "outer");
    EXPECT_STREQ(ev[2].name, "worker");
    EXPECT_EQ(ev[0].tid, ev[1].tid);
    EXPECT_NE(ev[2].tid, ev[0].tid);
    EXPECT_GE(ev[0].ts_ns, ev[1].ts_ns);
    EXPECT_LE(ev[0].ts_ns + ev[0].dur_ns, ev[1].ts_ns + ev[1].dur_ns);

    const auto json = nlohmann::json::parse("[" + trace_json_events(ev, 5) + "]");
    int complete = 0;
    for (const auto& e : json) {
        EXPECT_EQ(e.at("pid"), 5);
        if (e.at("ph") == "M") continue;
        ++complete;
        EXPECT_EQ(e.at("ph"), "X");
        if (e.at("name") == "block 3") {
            EXPECT_EQ(e.at("args").at("index"), 3);
            EXPECT_EQ(e.at("args").at("bytes"), 4096);
            EXPECT_DOUBLE_EQ(double(e.at("ts")), ev[0].ts_ns / 1000.0);
        }
    }
    EXPECT_EQ(complete, 3);
    EXPECT_EQ(json[0].at("args").at("name"), "rank 5");
    trace_clear();
    EXPECT_TRUE(trace_events().empty());
}

std::string config_error(const std::string& value) {
    try {
        load_config("", {"log.profile_steps=" + value});
    } catch (const InvalidInput& e) {
        return e.what();
    }
    return "";
}

TEST(Trace, ProfileStepsIsAListOfTwoSteps) {
    EXPECT_TRUE(load_config("", {}).log.profile_steps.empty());
    const StepRange r = load_config("", {"log.profile_steps=[3, 7]"}).log.profile_steps;
    EXPECT_EQ(r.first, 3);
    EXPECT_EQ(r.last, 7);
    EXPECT_TRUE(r.contains(3) && r.contains(7) && !r.contains(2) && !r.contains(8));
    const std::string path = test::temp_dir("trace_cfg") + "/c.yaml";
    test::write_file(path, "log:\n  profile_steps: [2, 2]\n");
    EXPECT_EQ(load_config(path, {}).log.profile_steps.last, 2);
    for (const char* bad : {"[5, 3]", "[0, 2]", "[1, 2, 3]", "4", "[a, b]"}) {
        const std::string err = config_error(bad);
        EXPECT_NE(err.find("log.profile_steps"), std::string::npos) << bad << ": " << err;
        EXPECT_NE(err.find("[first, last]"), std::string::npos) << bad << ": " << err;
    }
    EXPECT_NE(config_error("-1").find("log.profile_steps"), std::string::npos);
}

}  // namespace
}  // namespace meshlm
