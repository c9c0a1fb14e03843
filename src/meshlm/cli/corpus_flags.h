// The corpus-reader flags shared by commands that read raw inputs (prepare, train-tokenizer):
// --format, --field, --separator, --skip-bad-lines, all filling one CorpusReadOptions.
#pragma once

#include <CLI/CLI.hpp>

#include "meshlm/data/corpus_reader.h"

namespace meshlm {

// `read` must outlive the parse (commands keep it in their shared argument struct).
void add_corpus_read_flags(CLI::App* cmd, CorpusReadOptions& read);

}  // namespace meshlm
