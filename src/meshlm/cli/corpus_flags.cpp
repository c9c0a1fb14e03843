#include "meshlm/cli/corpus_flags.h"

namespace meshlm {

void add_corpus_read_flags(CLI::App* cmd, CorpusReadOptions& read) {
    cmd->add_option_function<std::string>(
           "--format", [&read](const std::string& s) { read.format = parse_corpus_format(s); },
           "input format (auto: JSONL for .jsonl files, text otherwise)")
        ->default_str("auto")
        ->check(CLI::IsMember({"auto", "text", "jsonl"}));
    cmd->add_option("--field", read.field, "JSONL field holding the document text")
        ->capture_default_str();
    cmd->add_option("--separator", read.separator,
                    "text: a line equal to this ends a document (empty: one document per file)");
    cmd->add_flag("--skip-bad-lines", read.skip_bad_lines,
                  "count and skip malformed JSONL records instead of failing");
}

}  // namespace meshlm
