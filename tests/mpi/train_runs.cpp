#include "train_runs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "meshlm/io/weights.h"
#include "meshlm/model/gpt2.h"

namespace meshlm::test {

CommandResult run_train(int np, const std::string& args, const std::string& env) {
    const std::string launch =
        np == 1 ? std::string(MESHLM_BINARY)
                : std::string(MESHLM_MPIRUN) + " -np " + std::to_string(np) + " " + MESHLM_BINARY;
    return run_command("env OMP_WAIT_POLICY=PASSIVE MESHLM_COMM_TIMEOUT=60 " + env +
                       " timeout -s KILL 120 " + launch + " train" + args);
}

TrainedRun train_run(int np, const std::string& dir, const std::string& args,
                     const ModelConfig& model) {
    auto r = run_train(np, args);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    TrainedRun out;
    out.output = r.output;
    std::istringstream in(read_file(dir + "/metrics.jsonl"));
    for (std::string line; std::getline(in, line);)
        out.steps.push_back(nlohmann::json::parse(line));
    const ParamLayout layout = gpt2_layout(model);
    out.weights.assign(layout.total(), 0.f);
    load_weights(dir + "/model.safetensors", layout, out.weights.data());
    return out;
}

void expect_same_training(const TrainedRun& ref, const TrainedRun& got, std::size_t steps,
                          const std::string& what) {
    ASSERT_EQ(got.steps.size(), steps) << what << "\n" << got.output;
    ASSERT_GE(ref.steps.size(), steps) << what;
    const std::size_t skip = ref.steps.size() - steps;
    double worst = 0;
    for (std::size_t s = 0; s < steps; ++s) {
        const double a = ref.steps[skip + s]["loss"], b = got.steps[s]["loss"];
        worst = std::max(worst, std::abs(a - b) / std::abs(a));
        EXPECT_LE(std::abs(a - b), 1e-5 * std::abs(a)) << what << " step " << skip + s + 1;
    }
    ASSERT_EQ(ref.weights.size(), got.weights.size()) << what;
    float diff = 0;
    for (std::size_t i = 0; i < ref.weights.size(); ++i)
        diff = std::max(diff, std::abs(ref.weights[i] - got.weights[i]));
    EXPECT_LE(diff, 1e-5f) << what << ": max |weight difference|";
    std::printf("%s: max relative loss difference %.2e, max |weight difference| %.2e\n",
                what.c_str(), worst, diff);
}

}  // namespace meshlm::test
