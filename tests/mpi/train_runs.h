// Shared by the tests that launch `meshlm train` under mpirun and compare with one process:
// launching, reading a run back (metrics.jsonl and the final weights), comparing two runs.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <vector>

#include "meshlm/model/model_config.h"
#include "test_util.h"

namespace meshlm::test {

// " --config SOURCE/configs/tiny-gpt2.yaml": a GPT-2, the option table's defaults, which the
// --config.model.* overrides of these tests change (without --config, `meshlm train` trains the
// default run's recipe, a Transformer-VQ).
std::string gpt2_config();
// Flags training tiny_model() on synthetic tokens (drawn per global batch) for `steps` steps,
// `batch` rows per data-parallel rank, `accum` micro-batches, a checkpoint every
// `checkpoint_interval` steps (0: none), into `dir`, one thread, logging every step.
std::string tiny_flags(const std::string& dir, int steps, int batch, int accum,
                       int checkpoint_interval);
// " --config.parallel.data=D --config.parallel.model=M --config.parallel.zero_stage=S"
std::string mesh_flags(int data, int model, int stage);

// `meshlm train ARGS` on np processes (np 1: no launcher), killed after 120 s.
CommandResult run_train(int np, const std::string& args, const std::string& env = "");

struct TrainedRun {
    std::vector<nlohmann::json> steps;  // metrics.jsonl lines (resumed runs: the later steps)
    std::vector<float> weights;         // model.safetensors in the single-process layout
    std::string output;
};

// Trains and reads the run in `dir` back; the weights are laid out for `model`.
TrainedRun train_run(int np, const std::string& dir, const std::string& args,
                     const ModelConfig& model);

// How far run b is from run a: the largest relative loss difference over their common steps
// and the relative L2 distance of the final weights. Prints both under `what`.
struct RunDistance {
    double loss = 0, weights = 0;
};
RunDistance run_distance(const TrainedRun& a, const TrainedRun& b, const std::string& what);

// `got` must hold the last `steps` steps of `ref`'s run: their losses within 1e-5 relative and
// every final weight within 1e-5 absolute (the attention key biases too: their gradient, exactly
// zero, is zeroed after backward, see model/key_bias.h). Prints the margins.
void expect_same_training(const TrainedRun& ref, const TrainedRun& got, std::size_t steps,
                          const std::string& what);

}  // namespace meshlm::test
