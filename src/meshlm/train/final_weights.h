// The final model.safetensors of a multi-rank run (the single-process layout, HF GPT-2 names:
// the file `sample`, `eval` and `convert` read), written by all ranks at once from their ZeRO
// chunks of their tensor-parallel shards, so that no rank ever holds the whole model (the point
// of FSDP). The ranks must share the run directory's filesystem, as for sharded checkpoints.
#pragma once

#include <map>
#include <string>

#include "meshlm/model/model_config.h"
#include "meshlm/parallel/mesh.h"
#include "meshlm/train/learner.h"

namespace meshlm {

// Collective over mesh.world(). Rank 0 creates PATH.tmp at its final size holding the header;
// every rank writes its part of each tensor in place (pwrite; the replicated tensors of a
// tensor-parallel run by model rank 0 only) and syncs; rank 0 renames the file into place and
// syncs the directory. A failure on any rank fails every rank and removes the temporary file.
void write_final_weights(const DeviceMesh& mesh, Learner& learner, const ModelConfig& model,
                         const std::string& path,
                         const std::map<std::string, std::string>& metadata);
// The same from any values laid out as the learner's chunk: `chunk` (host memory) holds
// [begin, begin + count) of this rank's local layout `local` (Learner::local_chunk's span).
void write_final_weights(const DeviceMesh& mesh, const ParamLayout& local, const float* chunk,
                         std::size_t begin, std::size_t count, const ModelConfig& model,
                         const std::string& path,
                         const std::map<std::string, std::string>& metadata);

}  // namespace meshlm
