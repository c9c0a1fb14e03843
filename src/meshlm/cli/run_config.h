// The config a run is trained with, resolved from a command line: what `meshlm train` saves as
// RUN_DIR/config.yaml and `meshlm config --dump` prints.
//
// Two steps beyond load_config: a prepared data.path's meta.json supplies data.tokenizer and
// model.vocab_size where neither the file nor an override set them (a vocabulary smaller than
// the data's is an error naming both; a different tokenizer is refused when the data is opened,
// data/prepare.h check_prepared_tokenizer); and input paths are made absolute, so that the saved
// config works from any working directory.
#pragma once

#include <string>
#include <vector>

#include "meshlm/cli/config.h"

namespace meshlm {

// load_config(path, overrides, keys_given) followed by the two steps above; an empty log.dir
// becomes runs/<config name>. `keys_given` gets the keys the file or the overrides set (not
// those meta.json supplied).
Config resolve_run_config(const std::string& path, const std::vector<std::string>& overrides,
                          std::vector<std::string>* keys_given = nullptr);

// data.path, data.cache_dir, data.tokenizer (a file) and model.init_from made absolute against
// the working directory; empty values and the byte tokenizer stay as they are. log.dir stays as
// given: commands find a run by the path they are given, never by its log.dir.
void make_paths_absolute(Config& c);

}  // namespace meshlm
