// Corpus preparation: raw inputs -> tokenized, split, sharded data directory (`meshlm prepare`).
//
// A prepared directory holds {train,val,test}_NNNNNN.bin token shards (data/shard.h) and a
// meta.json, written last and atomically, so a directory without meta.json is unfinished:
//   {
//     "format": "meshlm-prepared", "version": 1, "meshlm_version": "0.1.0",
//     "tokenizer": {"name", "spec", "hash", "vocab_size", "eot_id"},
//     "token_dtype": "uint16" | "uint32",
//     "inputs": [...], "reader": {"format", "field", "separator", "skip_bad_lines"},
//     "split": {"seed", "val_fraction", "test_fraction"},
//     "stats": {"files", "skipped_files", "documents", "bytes", "bad_lines", "tokens"},
//     "splits": {"train": {"documents", "tokens",
//                          "shards": [{"file", "documents", "tokens"}, ...]}, "val": ..., "test":
//                          ...}
//   }
// Every document is followed by the tokenizer's end-of-text token. The split is by document:
// a seeded Fisher-Yates shuffle of document indices puts the first floor(n * val_fraction)
// (at least one when the fraction is > 0) in val, the next ones in test, the rest in train; each
// split keeps corpus order. Output is identical whatever the thread count.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "meshlm/data/corpus_reader.h"
#include "meshlm/data/tokenizer.h"

namespace meshlm {

struct PrepareOptions {
    CorpusReadOptions read;
    std::string tokenizer_spec = "byte";  // recorded in meta.json; its file(s) are hashed
    double val_fraction = 0.1;
    double test_fraction = 0.0;
    std::uint64_t seed = 1234;
    std::uint64_t shard_tokens = 100'000'000;  // cap per shard (a longer document gets its own)
    int threads = 0;                           // 0: all available cores
    bool progress = true;                      // report progress on stderr
};

struct PreparedShard {
    std::string file;  // name inside the prepared directory
    std::uint64_t documents = 0, tokens = 0;
};

struct PreparedSplit {
    std::uint64_t documents = 0, tokens = 0;
    std::vector<PreparedShard> shards;
};

struct PreparedMeta {
    std::string tokenizer_name, tokenizer_spec, tokenizer_hash;
    int vocab_size = 0;
    std::int32_t eot_id = 0;
    int token_bytes = 2;
    std::map<std::string, PreparedSplit> splits;  // "train", "val", "test"
};

// Tokenizes, splits and shards the documents of `inputs` into out_dir (created if needed;
// an earlier meta.json and shards there are removed first). Returns what meta.json records.
PreparedMeta prepare_corpus(const std::vector<std::string>& inputs, const PrepareOptions& opt,
                            const Tokenizer& tok, const std::string& out_dir);

// A byte-level corpus split by position instead of by document (seed 001's enwik8: the first
// 90M bytes train, the next 5M validation, the next 5M test): the first bytes[0] bytes of `input`
// go to train, the next bytes[1] to val, the next bytes[2] to test, each split one document of
// the byte tokenizer's ids, in file order, with no end-of-text token (the seed appends none).
// Needs the byte tokenizer and a file at least that long; writes out_dir as prepare_corpus does.
PreparedMeta prepare_byte_splits(const std::string& input, const std::uint64_t (&bytes)[3],
                                 const Tokenizer& tok, const std::string& out_dir);

// A stable fingerprint of a tokenizer's content, never its path: its kind (byte, or the file
// type), vocabulary size, end-of-text id, the contents of the file(s) `spec` names (a file or a
// directory) and the ids it gives a fixed probe text. "fnv1a64:<16 hex digits>".
std::string tokenizer_fingerprint(const Tokenizer& tok, const std::string& spec);

// True when dir holds a meta.json (a finished prepare).
bool is_prepared_dir(const std::string& dir);
// Reads dir/meta.json. Throws InvalidInput when missing (unfinished) or malformed.
PreparedMeta read_prepared_meta(const std::string& dir);
// Throws InvalidInput with both names when dir was prepared with a different tokenizer.
void check_prepared_tokenizer(const std::string& dir, const Tokenizer& tok,
                              const std::string& spec);

}  // namespace meshlm
