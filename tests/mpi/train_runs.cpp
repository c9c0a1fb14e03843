#include "train_runs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "meshlm/io/weights.h"
#include "meshlm/model/transformer.h"
#include "meshlm/model/transformer_layout.h"

namespace meshlm::test {

std::string gpt2_config() {
    return " --config " + source_dir() + "/configs/tiny-gpt2.yaml";
}

std::string tiny_flags(const std::string& dir, int steps, int batch, int accum,
                       int checkpoint_interval) {
    return gpt2_config() +
           " --config.data.synthetic=true --config.model.n_layer=2 --config.model.d_model=32"
           " --config.model.n_head=2 --config.model.vocab_size=300 --config.model.max_seq_len=16"
           " --config.train.seq_len=16 --config.train.steps=" +
           std::to_string(steps) + " --config.train.batch_size=" + std::to_string(batch) +
           " --config.train.grad_accum=" + std::to_string(accum) +
           " --config.log.interval=1 --config.log.sample_tokens=0 --config.train.peak_gflops=100"
           " --config.train.threads=1 --config.optim.warmup_steps=2 --config.optim.grad_clip=1.0"
           // fp32: these runs compare layouts to 1e-5 (bf16 has its own tests)
           " --config.train.precision=fp32"
           " --config.checkpoint.interval=" +
           std::to_string(checkpoint_interval) + " --config.log.dir=" + dir;
}

std::string mesh_flags(int data, int model, int stage) {
    return " --config.parallel.data=" + std::to_string(data) +
           " --config.parallel.model=" + std::to_string(model) +
           " --config.parallel.zero_stage=" + std::to_string(stage);
}

CommandResult run_train(int np, const std::string& args, const std::string& env) {
    const std::string launch =
        np == 1 ? std::string(MESHLM_BINARY)
                : std::string(MESHLM_MPIRUN) + " -np " + std::to_string(np) + " " + MESHLM_BINARY;
    // No stdin: mpirun forwards it, and reading a terminal from the background process group
    // that `timeout` makes stops it (SIGTTIN).
    return run_command("env OMP_WAIT_POLICY=PASSIVE MESHLM_COMM_TIMEOUT=60 " + env +
                       " timeout -s KILL 120 " + launch + " train" + args + " < /dev/null");
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
    const ParamLayout layout = transformer_layout(model);
    out.weights.assign(layout.total(), 0.f);
    load_weights(dir + "/model.safetensors", layout, out.weights.data());
    return out;
}

RunDistance run_distance(const TrainedRun& a, const TrainedRun& b, const std::string& what) {
    RunDistance d;
    const std::size_t n = std::min(a.steps.size(), b.steps.size());
    for (std::size_t s = 0; s < n; ++s) {
        const double x = a.steps[s]["loss"], y = b.steps[s]["loss"];
        d.loss = std::max(d.loss, std::abs(x - y) / std::abs(x));
    }
    double diff = 0, norm = 0;
    for (std::size_t i = 0; i < a.weights.size() && i < b.weights.size(); ++i) {
        diff += (double(a.weights[i]) - b.weights[i]) * (double(a.weights[i]) - b.weights[i]);
        norm += double(a.weights[i]) * a.weights[i];
    }
    d.weights = norm > 0 ? std::sqrt(diff / norm) : 0;
    std::printf("%s: max relative loss difference %.2e, relative L2 weight distance %.2e\n",
                what.c_str(), d.loss, d.weights);
    return d;
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
