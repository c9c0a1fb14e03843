// The `data` section of the option table (config_table.h): one `.add(...)` per key, in the
// order `meshlm config --list`, the dump and the help show them.
#include "meshlm/cli/config_table.h"

namespace meshlm::config_detail {

void add_data_options(OptionTable& t) {
    Section<DataConfig>(t, "data", &Config::data)
        .add("path", &DataConfig::path,
             "a prepared directory, or raw inputs (file, directory, glob; text or JSONL, .gz/.zst) "
             "prepared into a cache on first use")
        .add("format", &DataConfig::format, "raw inputs: file format",
             one_of({"auto", "text", "jsonl"}))
        .add("field", &DataConfig::field, "raw JSONL: the field holding a document")
        .add("separator", &DataConfig::separator,
             "raw text: line that separates documents; empty = one document per file")
        .add("skip_bad_lines", &DataConfig::skip_bad_lines,
             "raw JSONL: count and skip malformed records instead of failing")
        .add("tokenizer", &DataConfig::tokenizer,
             "byte, or a tokenizer.json, .tiktoken or SentencePiece .model file")
        .add("val_fraction", &DataConfig::val_fraction, "raw inputs: share of documents held out",
             in_open(0, 1))
        .add("test_fraction", &DataConfig::test_fraction,
             "raw inputs: share of documents held out for testing", in_closed_open(0, 1))
        .add("split_seed", &DataConfig::split_seed, "raw inputs: seeds the document split")
        .add("cache_dir", &DataConfig::cache_dir,
             "where raw inputs are prepared; empty = $XDG_CACHE_HOME/meshlm or ~/.cache/meshlm")
        .add("packing", &DataConfig::packing,
             "concat: windows across documents; pad: one document per row, padding masked",
             one_of({"concat", "pad"}))
        .add("synthetic", &DataConfig::synthetic,
             "uniformly random tokens instead of text (benchmarks)");
}

}  // namespace meshlm::config_detail
