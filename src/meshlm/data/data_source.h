// Resolves data.path to a prepared directory: a directory from `meshlm prepare` is used as it
// is (after checking it was made with the configured tokenizer); raw inputs are prepared once
// into a cache directory keyed by the inputs (paths, sizes, modification times), the reader
// and split settings and the tokenizer's fingerprint, and reused while none of them changes.
#pragma once

#include <iosfwd>
#include <string>

#include "meshlm/data/data_config.h"
#include "meshlm/data/tokenizer.h"

namespace meshlm {

// The cache root: data.cache_dir, else $XDG_CACHE_HOME/meshlm, else $HOME/.cache/meshlm.
std::string data_cache_root(const DataConfig& cfg);

// Returns the prepared directory to load; prepares raw inputs into the cache when needed
// (written under a temporary name and renamed, so an interrupted prepare is never reused).
std::string resolve_prepared_data(const DataConfig& cfg, const Tokenizer& tok, std::ostream& log);

}  // namespace meshlm
