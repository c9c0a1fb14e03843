// A run's weights as a Hugging Face GPT2LMHeadModel directory (meshlm convert --to hf,
// meshlm reshard --hf).
#pragma once

#include <string>
#include <vector>

#include "meshlm/cli/run_dir.h"
#include "meshlm/io/hf_gpt2.h"

namespace meshlm {

// Writes config.json, generation_config.json and the weights (params in gpt2_layout of the
// run's model) into dir, plus tokenizer.json when the run's tokenizer is one. Returns the
// weight files written; `tokenizer_note` says what became of the tokenizer.
std::vector<std::string> export_hf_dir(const std::string& dir, const RunDir& run,
                                       const float* params, HfExportOptions opt,
                                       std::string& tokenizer_note);

}  // namespace meshlm
