// Where training text comes from, how it is tokenized, split and packed.
#pragma once

#include <string>

namespace meshlm {

struct DataConfig {
    // A prepared directory (`meshlm prepare`), or raw inputs (a file, directory or glob of text
    // or JSONL, optionally .gz / .zst) that training prepares into a cache by itself. The
    // default is Debian's fortunes corpus.
    std::string path = "/usr/share/games/fortunes";
    std::string format = "auto";     // raw inputs: auto | text | jsonl
    std::string field = "text";      // raw JSONL: the field holding a document
    std::string separator = "%";     // raw text: a line equal to this ends a document
    bool skip_bad_lines = false;     // raw JSONL: skip malformed records instead of failing
    std::string tokenizer = "byte";  // byte | tokenizer.json | .tiktoken | SentencePiece .model
    float val_fraction = 0.1f;       // raw inputs: share of documents held out for validation
    float test_fraction = 0.f;       // raw inputs: share held out for testing
    int split_seed = 1234;           // raw inputs: seeds the document shuffle of the split
    std::string cache_dir;           // where raw inputs are prepared; empty = ~/.cache/meshlm
    std::string packing = "concat";  // concat (windows across documents) | pad (one per row)
    bool synthetic = false;          // uniformly random tokens instead of text (benchmarks)
};

}  // namespace meshlm
