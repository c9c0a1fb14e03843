// A run's weights as a Hugging Face directory of the architecture its model maps onto
// (meshlm convert --to hf, meshlm reshard --hf).
#pragma once

#include <string>
#include <vector>

#include "meshlm/cli/run_dir.h"
#include "meshlm/io/hf_model.h"

namespace meshlm {

// Writes config.json, generation_config.json and the weights (params in transformer_layout of
// the run's model) into dir, and the tokenizer files (io/hf_tokenizer_files.h: tokenizer.json,
// tokenizer_config.json, special_tokens_map.json; the run's own generation_config.json when it
// has one). Returns the architecture and the weight files written; `tokenizer_note` says what
// became of the tokenizer. A model no HF architecture computes is refused before anything is
// written.
HfExport export_hf_dir(const std::string& dir, const RunDir& run, const float* params,
                       HfExportOptions opt, std::string& tokenizer_note);

}  // namespace meshlm
