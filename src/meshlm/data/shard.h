// Token shards: the on-disk form of a tokenized corpus split, written by `meshlm prepare` and
// memory-mapped for training.
//
// File layout (all integers little-endian):
//   offset  size  field
//        0     8  magic "MESHTOK\0"
//        8     4  u32 version (1)
//       12     4  u32 token_bytes: 2 (uint16 tokens, vocab_size <= 65536) or 4 (uint32)
//       16     4  u32 vocab_size of the tokenizer that wrote it
//       20     4  u32 eot_id: the end-of-text token that ends every document
//       24     8  u64 n_tokens
//       32     8  u64 n_docs
//       40    24  reserved, zero
//       64     8 * (n_docs + 1)  u64 document offsets, in tokens: document i is tokens
//                                [offset[i], offset[i+1]); offset[0] = 0, offset[n_docs] = n_tokens
//        …     token_bytes * n_tokens  tokens
// The file size is exactly 64 + 8 * (n_docs + 1) + token_bytes * n_tokens; readers refuse any
// other size (a truncated or padded file), another magic (a foreign file) or version.
// Writers write to a temporary name and rename when complete, so a shard at its final name is
// always whole.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace meshlm {

inline constexpr std::uint32_t kShardVersion = 1;
inline constexpr std::size_t kShardHeaderBytes = 64;

// Bytes per stored token for a vocabulary: 2 when every id fits uint16, else 4.
int shard_token_bytes(int vocab_size);

// Accumulates documents in memory and writes the shard on finish(). Destroyed without finish(),
// it leaves nothing on disk.
class ShardWriter {
  public:
    ShardWriter(std::string path, int vocab_size, std::int32_t eot_id);
    // Appends one document (ids must be in [0, vocab_size)).
    void add_document(std::span<const std::int32_t> ids);
    // Appends one document already encoded as n_tokens tokens of token_bytes() each.
    void add_document_raw(const void* data, std::uint64_t n_tokens);
    void finish();  // writes "<path>.tmp.<pid>", fsyncs, renames to path

    std::uint64_t tokens() const { return offsets_.back(); }
    std::uint64_t documents() const { return offsets_.size() - 1; }
    int token_bytes() const { return token_bytes_; }
    const std::string& path() const { return path_; }

  private:
    std::string path_;
    int vocab_size_, token_bytes_;
    std::int32_t eot_id_;
    std::vector<std::uint8_t> tokens_;
    std::vector<std::uint64_t> offsets_{0};
    bool finished_ = false;
};

// A read-only memory-mapped shard, validated when opened.
class ShardReader {
  public:
    explicit ShardReader(const std::string& path);  // throws InvalidInput naming the problem
    ~ShardReader();
    ShardReader(const ShardReader&) = delete;
    ShardReader& operator=(const ShardReader&) = delete;

    const std::string& path() const { return path_; }
    int token_bytes() const { return token_bytes_; }
    int vocab_size() const { return vocab_size_; }
    std::int32_t eot_id() const { return eot_id_; }
    std::uint64_t tokens() const { return n_tokens_; }
    std::uint64_t documents() const { return n_docs_; }
    // Token offset where document i starts (i <= documents(); i == documents() gives tokens()).
    std::uint64_t doc_offset(std::uint64_t i) const { return offsets_[i]; }
    std::int32_t token(std::uint64_t i) const;
    // Copies tokens [begin, begin + n) into out as int32.
    void copy_tokens(std::uint64_t begin, std::uint64_t n, std::int32_t* out) const;

  private:
    std::string path_;
    void* map_ = nullptr;
    std::size_t map_bytes_ = 0;
    int token_bytes_ = 0, vocab_size_ = 0;
    std::int32_t eot_id_ = 0;
    std::uint64_t n_tokens_ = 0, n_docs_ = 0;
    const std::uint64_t* offsets_ = nullptr;
    const std::uint8_t* tokens_ = nullptr;
};

}  // namespace meshlm
