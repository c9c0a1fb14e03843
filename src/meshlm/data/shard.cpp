#include "meshlm/data/shard.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>

#include "meshlm/core/atomic_file.h"
#include "meshlm/core/error.h"

namespace meshlm {
namespace {

constexpr char kMagic[8] = {'M', 'E', 'S', 'H', 'T', 'O', 'K', '\0'};

struct Header {
    char magic[8];
    std::uint32_t version, token_bytes, vocab_size, eot_id;
    std::uint64_t n_tokens, n_docs;
    std::uint8_t reserved[24];
};
static_assert(sizeof(Header) == kShardHeaderBytes);
static_assert(std::endian::native == std::endian::little, "shards are little-endian");

}  // namespace

int shard_token_bytes(int vocab_size) {
    return vocab_size <= 65536 ? 2 : 4;
}

ShardWriter::ShardWriter(std::string path, int vocab_size, std::int32_t eot_id)
    : path_(std::move(path)),
      vocab_size_(vocab_size),
      token_bytes_(shard_token_bytes(vocab_size)),
      eot_id_(eot_id) {
    MESHLM_CHECK(vocab_size > 0 && eot_id >= 0 && eot_id < vocab_size, "vocab ", vocab_size,
                 " eot ", eot_id);
}

void ShardWriter::add_document(std::span<const std::int32_t> ids) {
    std::size_t at = tokens_.size();
    tokens_.resize(at + ids.size() * token_bytes_);
    for (std::size_t i = 0; i < ids.size(); ++i) {
        std::int32_t id = ids[i];
        MESHLM_CHECK(id >= 0 && id < vocab_size_, "token id ", id, " outside the vocabulary of ",
                     vocab_size_);
        if (token_bytes_ == 2) {
            auto v = static_cast<std::uint16_t>(id);
            std::memcpy(&tokens_[at + 2 * i], &v, 2);
        } else {
            auto v = static_cast<std::uint32_t>(id);
            std::memcpy(&tokens_[at + 4 * i], &v, 4);
        }
    }
    offsets_.push_back(offsets_.back() + ids.size());
}

void ShardWriter::add_document_raw(const void* data, std::uint64_t n_tokens) {
    const auto* p = static_cast<const std::uint8_t*>(data);
    tokens_.insert(tokens_.end(), p, p + n_tokens * token_bytes_);
    offsets_.push_back(offsets_.back() + n_tokens);
}

void ShardWriter::finish() {
    MESHLM_CHECK(!finished_, "shard ", path_, " finished twice");
    Header h{};
    std::memcpy(h.magic, kMagic, 8);
    h.version = kShardVersion;
    h.token_bytes = static_cast<std::uint32_t>(token_bytes_);
    h.vocab_size = static_cast<std::uint32_t>(vocab_size_);
    h.eot_id = static_cast<std::uint32_t>(eot_id_);
    h.n_tokens = tokens();
    h.n_docs = documents();
    AtomicFile f(path_);
    f.write(&h, sizeof(h));
    f.write(offsets_.data(), offsets_.size() * sizeof(std::uint64_t));
    f.write(tokens_.data(), tokens_.size());
    f.commit();
    finished_ = true;
    tokens_ = {};
}

ShardReader::ShardReader(const std::string& path) : path_(path) {
    int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0) MESHLM_INVALID("cannot open token shard ", path, ": ", std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        ::close(fd);
        MESHLM_INVALID("cannot stat token shard ", path, ": ", std::strerror(errno));
    }
    map_bytes_ = static_cast<std::size_t>(st.st_size);
    if (map_bytes_ < kShardHeaderBytes) {
        ::close(fd);
        MESHLM_INVALID("token shard ", path, " is truncated: ", map_bytes_,
                       " bytes, smaller than the ", kShardHeaderBytes, "-byte header");
    }
    map_ = ::mmap(nullptr, map_bytes_, PROT_READ, MAP_SHARED, fd, 0);
    ::close(fd);
    if (map_ == MAP_FAILED) {
        map_ = nullptr;
        MESHLM_INVALID("cannot memory-map token shard ", path, ": ", std::strerror(errno));
    }
    Header h;
    std::memcpy(&h, map_, sizeof(h));
    // The message first: its values may be references into the mapping.
    auto fail = [&](auto&&... why) {
        const std::string msg = detail::concat("token shard ", path, " ", why...);
        ::munmap(map_, map_bytes_);
        map_ = nullptr;
        throw InvalidInput(msg);
    };
    if (std::memcmp(h.magic, kMagic, 8) != 0)
        fail("is not a meshlm token shard (bad magic; prepare data with `meshlm prepare`)");
    if (h.version != kShardVersion)
        fail("has format version ", h.version, "; this meshlm reads version ", kShardVersion,
             " (re-run `meshlm prepare`)");
    if (h.token_bytes != 2 && h.token_bytes != 4)
        fail("has invalid token width ", h.token_bytes, " bytes");
    if (h.vocab_size == 0 || h.vocab_size > INT32_MAX || h.eot_id >= h.vocab_size ||
        static_cast<int>(h.token_bytes) != shard_token_bytes(static_cast<int>(h.vocab_size)))
        fail("has an inconsistent header (vocab_size ", h.vocab_size, ", eot_id ", h.eot_id,
             ", token width ", h.token_bytes, ")");
    // Guard the size arithmetic against absurd counts before multiplying.
    const std::uint64_t limit = std::uint64_t{1} << 56;
    if (h.n_docs >= limit || h.n_tokens >= limit)
        fail("has absurd counts (", h.n_docs, " documents, ", h.n_tokens, " tokens)");
    const std::uint64_t want =
        kShardHeaderBytes + 8 * (h.n_docs + 1) + std::uint64_t{h.token_bytes} * h.n_tokens;
    if (map_bytes_ < want)
        fail("is truncated: ", map_bytes_, " bytes but its header promises ", want, " (", h.n_docs,
             " documents, ", h.n_tokens, " tokens)");
    if (map_bytes_ > want)
        fail("has ", map_bytes_ - want, " unexpected trailing bytes (header promises ", want, ")");
    token_bytes_ = static_cast<int>(h.token_bytes);
    vocab_size_ = static_cast<int>(h.vocab_size);
    eot_id_ = static_cast<std::int32_t>(h.eot_id);
    n_tokens_ = h.n_tokens;
    n_docs_ = h.n_docs;
    const auto* base = static_cast<const std::uint8_t*>(map_);
    offsets_ = reinterpret_cast<const std::uint64_t*>(base + kShardHeaderBytes);
    tokens_ = base + kShardHeaderBytes + 8 * (n_docs_ + 1);
    if (offsets_[0] != 0 || offsets_[n_docs_] != n_tokens_)
        fail("has a corrupt document index (first offset ", offsets_[0], ", last ",
             offsets_[n_docs_], ", tokens ", n_tokens_, ")");
    for (std::uint64_t i = 0; i < n_docs_; ++i)
        if (offsets_[i + 1] < offsets_[i])
            fail("has a corrupt document index (offset ", i + 1, " decreases)");
}

ShardReader::~ShardReader() {
    if (map_) ::munmap(map_, map_bytes_);
}

std::int32_t ShardReader::token(std::uint64_t i) const {
    if (token_bytes_ == 2) {
        std::uint16_t v;
        std::memcpy(&v, tokens_ + 2 * i, 2);
        return v;
    }
    std::uint32_t v;
    std::memcpy(&v, tokens_ + 4 * i, 4);
    return static_cast<std::int32_t>(v);
}

void ShardReader::copy_tokens(std::uint64_t begin, std::uint64_t n, std::int32_t* out) const {
    MESHLM_CHECK(begin + n <= n_tokens_, "tokens [", begin, ", ", begin + n, ") outside ", path_,
                 " (", n_tokens_, " tokens)");
    // A token outside the vocabulary (a corrupt shard) would be read past the embedding table.
    std::uint32_t largest = 0;
    if (token_bytes_ == 2) {
        const auto* p = reinterpret_cast<const std::uint16_t*>(tokens_) + begin;
        for (std::uint64_t i = 0; i < n; ++i) {
            out[i] = p[i];
            largest = std::max<std::uint32_t>(largest, p[i]);
        }
    } else {
        const auto* p = reinterpret_cast<const std::uint32_t*>(tokens_) + begin;
        for (std::uint64_t i = 0; i < n; ++i) {
            out[i] = static_cast<std::int32_t>(p[i]);
            largest = std::max(largest, p[i]);
        }
    }
    if (n > 0 && largest >= static_cast<std::uint32_t>(vocab_size_)) {
        const std::uint64_t at =
            begin + static_cast<std::uint64_t>(
                        std::find_if(out, out + n,
                                     [&](std::int32_t t) {
                                         return static_cast<std::uint32_t>(t) >=
                                                static_cast<std::uint32_t>(vocab_size_);
                                     }) -
                        out);
        MESHLM_INVALID("token shard ", path_, " holds token ", token(at), " at position ", at,
                       ", outside its vocabulary of ", vocab_size_, " (a corrupt shard)");
    }
}

}  // namespace meshlm
