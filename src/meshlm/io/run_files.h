// The files a run directory keeps beside its checkpoints that `sample`, `eval`, `serve` and
// `convert` read back without the trainer.
#pragma once

#include <string>

namespace meshlm {

// Where a run directory keeps its copy of a tokenizer file (so the run stays usable when the
// original moves): RUN_DIR/<file name>.
std::string run_tokenizer_copy(const std::string& run_dir, const std::string& spec);

}  // namespace meshlm
