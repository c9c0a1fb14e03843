// Resume and warm start are strict: the weights they load were computed by one model, and any
// model key that changes the computation (layers, width, heads, vocabulary, norm, positions,
// ... every key of the config table's model section) must keep its value. Tensor names and
// shapes are checked again when the weights are read (io/weights.h: every tensor matched and
// consumed).
#pragma once

#include <optional>
#include <string>

#include "meshlm/cli/config.h"

namespace meshlm {

// Throws InvalidInput naming every model key whose value differs between `source` (the config
// the weights were trained with, described by `what`, e.g. "the checkpoint runs/a/...") and
// `wanted` (this run's), with both values.
void require_same_model(const Config& source, const Config& wanted, const std::string& what);
// A checkpoint's optimizer state is its optim.name's (AdamW's moments, Lion's momentum,
// Adafactor's second moments, factored as its optim.adafactor_factored and
// optim.adafactor_min_dim_size_to_factor say): a resume under another optimizer or factoring is
// refused (init_from starts a fresh optimizer from its weights).
void require_same_optimizer(const Config& source, const Config& wanted, const std::string& what);

// The config of what model.init_from names: a run or checkpoint directory's config.yaml, or a
// Hugging Face directory's config.json (model section only); nullopt for a .safetensors file,
// whose tensors alone are checked.
std::optional<Config> init_from_config(const std::string& path);

}  // namespace meshlm
