#include "meshlm/data/prepare.h"

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "meshlm/core/atomic_file.h"
#include "meshlm/core/error.h"
#include "meshlm/core/hash.h"
#include "meshlm/core/rng.h"
#include "meshlm/data/json_int.h"
#include "meshlm/data/shard.h"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace meshlm {
namespace {

const char* const kSplits[] = {"train", "val", "test"};

void hash_file(Fnv1a& h, const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    if (!in) MESHLM_INVALID("cannot read tokenizer file ", p.string());
    std::vector<char> buf(1 << 16);
    while (in) {
        in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
        h.add(buf.data(), static_cast<std::size_t>(in.gcount()));
    }
}

// Progress on stderr: a redrawn bar with MB/s on a terminal, a plain line every 10 s otherwise.
class Progress {
  public:
    explicit Progress(bool enabled)
        : enabled_(enabled), tty_(enabled && ::isatty(::fileno(stderr))), start_(now()) {}
    void update(std::uint64_t disk_done, std::uint64_t disk_total, std::uint64_t text_bytes,
                std::uint64_t docs, std::uint64_t tokens, bool final = false) {
        if (!enabled_) return;
        double t = now();
        if (!final && t - last_ < (tty_ ? 0.2 : 10.0)) return;
        last_ = t;
        double frac = disk_total ? std::min(1.0, double(disk_done) / double(disk_total)) : 1.0;
        double mb = text_bytes / 1e6, rate = mb / std::max(t - start_, 1e-9);
        char line[256];
        std::snprintf(line, sizeof line, "%5.1f%%  %.1f MB  %.1f MB/s  %llu docs  %llu tokens",
                      100 * frac, mb, rate, static_cast<unsigned long long>(docs),
                      static_cast<unsigned long long>(tokens));
        if (tty_) {
            const int width = 30;
            int filled = static_cast<int>(frac * width);
            std::string bar(filled, '#');
            bar.resize(width, '.');
            std::fprintf(stderr, "\rprepare [%s] %s", bar.c_str(), line);
            if (final) std::fprintf(stderr, "\n");
        } else {
            std::fprintf(stderr, "prepare: %s\n", line);
        }
        std::fflush(stderr);
    }

  private:
    static double now() {
        using namespace std::chrono;
        return duration<double>(steady_clock::now().time_since_epoch()).count();
    }
    bool enabled_, tty_;
    // The first plain line comes after an interval too: a short prepare prints one line, the
    // final one.
    double start_, last_ = start_;
};

// Writes one split's documents into size-capped shards named <split>_NNNNNN.bin.
class SplitWriter {
  public:
    SplitWriter(std::string dir, std::string split, const Tokenizer& tok, std::uint64_t cap)
        : dir_(std::move(dir)), split_(std::move(split)), tok_(tok), cap_(cap) {}
    void add(const void* data, std::uint64_t n_tokens) {
        if (cur_ && cur_->documents() > 0 && cur_->tokens() + n_tokens > cap_) close();
        if (!cur_) {
            char name[64];
            std::snprintf(name, sizeof name, "%s_%06zu.bin", split_.c_str(), info_.shards.size());
            info_.shards.push_back({name, 0, 0});
            cur_ =
                std::make_unique<ShardWriter>(dir_ + "/" + name, tok_.vocab_size(), tok_.eot_id());
        }
        cur_->add_document_raw(data, n_tokens);
    }
    PreparedSplit finish() {
        close();
        return info_;
    }

  private:
    void close() {
        if (!cur_) return;
        cur_->finish();
        auto& s = info_.shards.back();
        s.documents = cur_->documents();
        s.tokens = cur_->tokens();
        info_.documents += s.documents;
        info_.tokens += s.tokens;
        cur_.reset();
    }
    std::string dir_, split_;
    const Tokenizer& tok_;
    std::uint64_t cap_;
    std::unique_ptr<ShardWriter> cur_;
    PreparedSplit info_;
};

bool is_our_output(const std::string& name) {
    static const std::regex re(R"((train|val|test)_\d{6}\.bin(\.tmp\..*)?|\.tokens\.tmp\..*)");
    return std::regex_match(name, re);
}

// meta.json's format header and what the meta records.
json meta_to_json(const PreparedMeta& m) {
    json splits = json::object();
    for (const auto& [name, s] : m.splits) {
        json shards = json::array();
        for (const auto& sh : s.shards)
            shards.push_back(
                {{"file", sh.file}, {"documents", sh.documents}, {"tokens", sh.tokens}});
        splits[name] = {{"documents", s.documents}, {"tokens", s.tokens}, {"shards", shards}};
    }
    json j = {{"format", "meshlm-prepared"}, {"version", 1}, {"meshlm_version", MESHLM_VERSION}};
    j.update(json{{"tokenizer",
                   {{"name", m.tokenizer_name},
                    {"spec", m.tokenizer_spec},
                    {"hash", m.tokenizer_hash},
                    {"vocab_size", m.vocab_size},
                    {"eot_id", m.eot_id}}},
                  {"token_dtype", m.token_bytes == 2 ? "uint16" : "uint32"},
                  {"splits", splits}});
    return j;
}

// A held-out split of very few documents is coarse: each document is a large share of the text
// (the fortunes files read without `--separator %` are 43 documents, of which 4 held out are 20%
// of the text). Usually the documents are not separated as meant; say so.
void warn_coarse_split(const PreparedMeta& meta, std::size_t documents) {
    constexpr std::uint64_t kFewDocuments = 20;
    std::uint64_t total = 0;
    for (const auto& [name, sp] : meta.splits) total += sp.tokens;
    for (const char* name : {"val", "test"}) {
        const auto it = meta.splits.find(name);
        if (it == meta.splits.end() || it->second.documents == 0 ||
            it->second.documents >= kFewDocuments)
            continue;
        std::fprintf(stderr,
                     "warning: the %s split is %llu of %zu documents, holding %.1f%% of the "
                     "tokens; with so few documents the split is coarse. Are the documents "
                     "separated as meant (--separator for text, --field for JSONL)?\n",
                     name, static_cast<unsigned long long>(it->second.documents), documents,
                     total ? 100.0 * static_cast<double>(it->second.tokens) / total : 0.0);
    }
}

// Removes what an earlier prepare left in out_dir (creating it if needed).
void clear_outputs(const std::string& out_dir) {
    fs::create_directories(out_dir);
    for (const auto& e : fs::directory_iterator(out_dir)) {
        std::string name = e.path().filename().string();
        if (name == "meta.json" || is_our_output(name)) fs::remove(e.path());
    }
}

// The tokenizer's part of meta.json.
void set_tokenizer_meta(PreparedMeta& meta, const Tokenizer& tok, const std::string& spec,
                        int token_bytes) {
    meta.tokenizer_name = tok.name();
    meta.tokenizer_spec = spec;
    meta.tokenizer_hash = tokenizer_fingerprint(tok, spec);
    meta.vocab_size = tok.vocab_size();
    meta.eot_id = tok.eot_id();
    meta.token_bytes = token_bytes;
}

// The temporary token file between prepare_corpus's passes, removed however prepare ends.
struct TmpFile {
    std::string path;
    std::FILE* f = nullptr;
    ~TmpFile() {
        if (f) std::fclose(f);
        std::remove(path.c_str());
    }
};

// Pass 1's result: every document's length in tokens (the tokens are in the TmpFile).
struct TokenizedCorpus {
    std::vector<std::uint64_t> doc_tokens;
    std::uint64_t total_tokens = 0;
};

// The next batch of documents: up to 4096 of them or 32 MiB. False once the corpus is read.
bool read_batch(CorpusReader& reader, std::vector<std::string>& batch) {
    batch.clear();
    std::size_t batch_bytes = 0;
    for (std::string doc; batch.size() < 4096 && batch_bytes < (32u << 20);) {
        if (!reader.next(doc)) return false;
        batch_bytes += doc.size();
        batch.push_back(std::move(doc));
    }
    return true;
}

// Tokenizes a batch in parallel, each document ending in the end-of-text token.
void encode_batch(const Tokenizer& tok, const std::vector<std::string>& batch,
                  std::vector<std::vector<std::int32_t>>& encoded, int threads) {
    const std::int32_t eot = tok.eot_id();
    encoded.assign(batch.size(), {});
    std::exception_ptr err;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
    for (std::size_t i = 0; i < batch.size(); ++i) {
        try {
            encoded[i] = tok.encode(batch[i]);
            encoded[i].push_back(eot);
        } catch (...) {
#pragma omp critical
            err = std::current_exception();
        }
    }
    if (err) std::rethrow_exception(err);
}

// Appends a batch's documents, in order, to the token file as token_bytes-wide ids.
void write_encoded(const std::vector<std::vector<std::int32_t>>& encoded, const Tokenizer& tok,
                   int token_bytes, TmpFile& tmp, std::vector<std::uint8_t>& raw,
                   TokenizedCorpus& out) {
    const std::int32_t V = tok.vocab_size();
    for (const auto& ids : encoded) {
        raw.resize(ids.size() * token_bytes);
        for (std::size_t i = 0; i < ids.size(); ++i) {
            if (ids[i] < 0 || ids[i] >= V)
                throw Error(detail::concat("tokenizer ", tok.name(), " produced id ", ids[i],
                                           " outside its vocabulary of ", V));
            if (token_bytes == 2) {
                auto v = static_cast<std::uint16_t>(ids[i]);
                std::memcpy(&raw[2 * i], &v, 2);
            } else {
                auto v = static_cast<std::uint32_t>(ids[i]);
                std::memcpy(&raw[4 * i], &v, 4);
            }
        }
        if (std::fwrite(raw.data(), 1, raw.size(), tmp.f) != raw.size())
            throw Error(detail::concat("write to ", tmp.path, " failed: ", std::strerror(errno)));
        out.doc_tokens.push_back(ids.size());
        out.total_tokens += ids.size();
    }
}

// Pass 1: read and tokenize in batches (parallel within a batch, appended in corpus order)
// into the token file; remember every document's length.
TokenizedCorpus tokenize_corpus(CorpusReader& reader, const Tokenizer& tok, int threads,
                                int token_bytes, bool show_progress, TmpFile& tmp,
                                std::vector<std::uint8_t>& raw) {
    Progress progress(show_progress);
    TokenizedCorpus c;
    std::vector<std::string> batch;
    std::vector<std::vector<std::int32_t>> encoded;
    for (bool more = true; more;) {
        more = read_batch(reader, batch);
        encode_batch(tok, batch, encoded, threads);
        write_encoded(encoded, tok, token_bytes, tmp, raw, c);
        progress.update(reader.input_bytes_done(), reader.input_bytes_total(), reader.stats().bytes,
                        reader.stats().documents, c.total_tokens);
    }
    progress.update(reader.input_bytes_done(), reader.input_bytes_total(), reader.stats().bytes,
                    reader.stats().documents, c.total_tokens, true);
    return c;
}

// The split of each of n documents (0 train, 1 val, 2 test): a seeded shuffle of document
// indices (Fisher-Yates with Philox), the first of which are held out.
std::vector<std::uint8_t> assign_splits(std::size_t n, const PrepareOptions& opt) {
    auto count_for = [&](double frac) -> std::size_t {
        if (frac <= 0) return 0;
        return std::max<std::size_t>(1, static_cast<std::size_t>(static_cast<double>(n) * frac));
    };
    const std::size_t n_val = count_for(opt.val_fraction), n_test = count_for(opt.test_fraction);
    if (n_val + n_test >= n)
        MESHLM_INVALID("corpus has ", n, " documents: too few for ", n_val, " validation and ",
                       n_test, " test documents plus at least one for training");
    std::vector<std::uint64_t> order(n);
    for (std::size_t i = 0; i < n; ++i) order[i] = i;
    Philox rng(opt.seed, 0x5B117);
    for (std::size_t i = n - 1; i > 0; --i) std::swap(order[i], order[rng.below(i + 1)]);
    std::vector<std::uint8_t> split_of(n, 0);
    for (std::size_t i = 0; i < n_val + n_test; ++i) split_of[order[i]] = i < n_val ? 1 : 2;
    return split_of;
}

// Pass 2: route documents, in corpus order, from the token file to their split's shards.
std::vector<std::unique_ptr<SplitWriter>> route_documents(
    TmpFile& tmp, const std::vector<std::uint64_t>& doc_tokens,
    const std::vector<std::uint8_t>& split_of, int token_bytes, const Tokenizer& tok,
    std::uint64_t shard_tokens, const std::string& out_dir, std::vector<std::uint8_t>& raw) {
    if (std::fflush(tmp.f) != 0 || std::fseek(tmp.f, 0, SEEK_SET) != 0)
        throw Error(detail::concat("cannot reread ", tmp.path, ": ", std::strerror(errno)));
    std::vector<std::unique_ptr<SplitWriter>> writers;
    for (const char* s : kSplits)
        writers.push_back(std::make_unique<SplitWriter>(out_dir, s, tok, shard_tokens));
    for (std::size_t d = 0; d < doc_tokens.size(); ++d) {
        raw.resize(doc_tokens[d] * token_bytes);
        if (std::fread(raw.data(), 1, raw.size(), tmp.f) != raw.size())
            throw Error(detail::concat("short read from ", tmp.path));
        writers[split_of[d]]->add(raw.data(), doc_tokens[d]);
    }
    return writers;
}

// meta.json of prepare_corpus: the meta and how it came about.
void write_corpus_meta(const std::string& out_dir, const PreparedMeta& meta,
                       const std::vector<std::string>& inputs, const PrepareOptions& opt,
                       const CorpusStats& st, std::uint64_t total_tokens) {
    json j = meta_to_json(meta);
    j["inputs"] = inputs;
    j["reader"] = {{"format", corpus_format_name(opt.read.format)},
                   {"field", opt.read.field},
                   {"separator", opt.read.separator},
                   {"skip_bad_lines", opt.read.skip_bad_lines}};
    j["split"] = {{"seed", opt.seed},
                  {"val_fraction", opt.val_fraction},
                  {"test_fraction", opt.test_fraction}};
    j["stats"] = {{"files", st.files},         {"skipped_files", st.skipped_files},
                  {"documents", st.documents}, {"bytes", st.bytes},
                  {"bad_lines", st.bad_lines}, {"tokens", total_tokens}};
    write_file_atomic(out_dir + "/meta.json", j.dump(2) + "\n");
}

}  // namespace

std::string tokenizer_fingerprint(const Tokenizer& tok, const std::string& spec) {
    // Content only, never the path: a run directory's copy of the file, or the same file named
    // by another path, is the same tokenizer. The kind comes from the spec's form (byte, or the
    // file type), the rest from the file's bytes (vocabulary, merges, special tokens) and from
    // what the tokenizer makes of a probe text.
    Fnv1a h;
    std::error_code ec;
    h.add(spec == "byte" || !fs::exists(spec, ec) ? spec : fs::path(spec).extension().string());
    std::int64_t nums[2] = {tok.vocab_size(), tok.eot_id()};
    h.add(nums, sizeof nums);
    if (fs::is_regular_file(spec, ec)) {
        hash_file(h, spec);
    } else if (fs::is_directory(spec, ec)) {
        std::vector<fs::path> files;
        for (const auto& e : fs::recursive_directory_iterator(spec))
            if (e.is_regular_file()) files.push_back(e.path());
        std::sort(files.begin(), files.end());
        for (const auto& f : files) {
            h.add(fs::relative(f, spec).string());
            hash_file(h, f);
        }
    } else {
        h.add(spec);
    }
    const std::string probe =
        "The quick brown fox, 1234 times!\n\tcaf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac  <|endoftext|>";
    auto ids = tok.encode(probe);
    h.add(ids.data(), ids.size() * sizeof(std::int32_t));
    return "fnv1a64:" + h.hex();
}

PreparedMeta prepare_corpus(const std::vector<std::string>& inputs, const PrepareOptions& opt,
                            const Tokenizer& tok, const std::string& out_dir) {
    if (opt.val_fraction < 0 || opt.test_fraction < 0 || opt.val_fraction + opt.test_fraction >= 1)
        MESHLM_INVALID("split fractions must be >= 0 and leave some training data (val ",
                       opt.val_fraction, ", test ", opt.test_fraction, ")");
    if (opt.shard_tokens == 0) MESHLM_INVALID("shard size must be at least 1 token");
    CorpusReader reader(inputs, opt.read);  // validates inputs before touching out_dir
    clear_outputs(out_dir);

    const int token_bytes = shard_token_bytes(tok.vocab_size());
    const int threads = opt.threads > 0 ? opt.threads : omp_get_max_threads();
    TmpFile tmp{out_dir + "/.tokens.tmp." + std::to_string(::getpid())};
    tmp.f = std::fopen(tmp.path.c_str(), "w+b");
    if (!tmp.f) MESHLM_INVALID("cannot write ", tmp.path, ": ", std::strerror(errno));

    std::vector<std::uint8_t> raw;  // one document's tokens as stored, in both passes
    const TokenizedCorpus corpus =
        tokenize_corpus(reader, tok, threads, token_bytes, opt.progress, tmp, raw);
    const std::size_t n = corpus.doc_tokens.size();
    const auto writers = route_documents(tmp, corpus.doc_tokens, assign_splits(n, opt), token_bytes,
                                         tok, opt.shard_tokens, out_dir, raw);

    PreparedMeta meta;
    set_tokenizer_meta(meta, tok, opt.tokenizer_spec, token_bytes);
    for (std::size_t s = 0; s < 3; ++s) meta.splits[kSplits[s]] = writers[s]->finish();
    write_corpus_meta(out_dir, meta, inputs, opt, reader.stats(), corpus.total_tokens);
    if (opt.progress) warn_coarse_split(meta, n);
    return meta;
}

PreparedMeta prepare_byte_splits(const std::string& input, const std::uint64_t (&bytes)[3],
                                 const Tokenizer& tok, const std::string& out_dir) {
    if (tok.name() != "byte")
        MESHLM_INVALID("--split-bytes splits a file of bytes: it needs --tokenizer byte (got ",
                       tok.name(), ")");
    std::error_code ec;
    const auto size = fs::file_size(input, ec);
    if (ec) MESHLM_INVALID("cannot read ", input, ": ", ec.message());
    const std::uint64_t want = bytes[0] + bytes[1] + bytes[2];
    if (bytes[0] == 0 || size < want)
        MESHLM_INVALID("--split-bytes ", bytes[0], ",", bytes[1], ",", bytes[2], " needs ", want,
                       " bytes and some training data; ", input, " has ", size);
    std::ifstream in(input, std::ios::binary);
    if (!in) MESHLM_INVALID("cannot open ", input);
    clear_outputs(out_dir);
    const int token_bytes = shard_token_bytes(tok.vocab_size());
    MESHLM_CHECK(token_bytes == 2, "byte ids are stored as uint16");
    PreparedMeta meta;
    std::vector<char> buf;
    std::vector<std::uint16_t> ids;
    for (int s = 0; s < 3; ++s) {
        SplitWriter w(out_dir, kSplits[s], tok, ~std::uint64_t{0});
        if (bytes[s] > 0) {
            buf.resize(bytes[s]);
            if (!in.read(buf.data(), static_cast<std::streamsize>(bytes[s])))
                throw Error(detail::concat("short read from ", input));
            ids.resize(bytes[s]);
            for (std::size_t i = 0; i < ids.size(); ++i)
                ids[i] = static_cast<std::uint8_t>(buf[i]);  // the byte tokenizer: id = byte
            w.add(ids.data(), ids.size());
        }
        meta.splits[kSplits[s]] = w.finish();
    }
    set_tokenizer_meta(meta, tok, "byte", token_bytes);
    json j = meta_to_json(meta);
    j["inputs"] = {input};
    j["reader"] = {{"format", "bytes"}};
    j["split"] = {{"bytes", {bytes[0], bytes[1], bytes[2]}}};
    j["stats"] = {{"files", 1}, {"documents", 3}, {"bytes", want}, {"tokens", want}};
    write_file_atomic(out_dir + "/meta.json", j.dump(2) + "\n");
    return meta;
}

bool is_prepared_dir(const std::string& dir) {
    std::error_code ec;
    return fs::is_regular_file(dir + "/meta.json", ec);
}

PreparedMeta read_prepared_meta(const std::string& dir) {
    const std::string path = dir + "/meta.json";
    std::error_code ec;
    if (!fs::is_directory(dir, ec))
        MESHLM_INVALID("prepared data directory ", dir, " does not exist");
    if (!fs::is_regular_file(path, ec))
        MESHLM_INVALID(dir,
                       " has no meta.json: not a prepared data directory, or its `meshlm "
                       "prepare` did not finish (run it again)");
    std::ifstream in(path);
    json j = json::parse(in, nullptr, false);
    try {
        if (j.is_discarded() || j.value("format", "") != "meshlm-prepared")
            MESHLM_INVALID(path, " is not a meshlm prepared-data meta.json");
        if (json_int<int>(j.at("version")) != 1)
            MESHLM_INVALID(path, " has version ", j.at("version"),
                           "; this meshlm reads version 1 (re-run `meshlm prepare`)");
        PreparedMeta m;
        const auto& t = j.at("tokenizer");
        m.tokenizer_name = t.at("name");
        m.tokenizer_spec = t.at("spec");
        m.tokenizer_hash = t.at("hash");
        m.vocab_size = json_int<int>(t.at("vocab_size"));
        m.eot_id = json_int<std::int32_t>(t.at("eot_id"));
        m.token_bytes = j.at("token_dtype") == "uint16" ? 2 : 4;
        for (const auto& [name, s] : j.at("splits").items()) {
            PreparedSplit& ps = m.splits[name];
            ps.documents = json_int<std::uint64_t>(s.at("documents"));
            ps.tokens = json_int<std::uint64_t>(s.at("tokens"));
            for (const auto& sh : s.at("shards"))
                ps.shards.push_back({sh.at("file"), json_int<std::uint64_t>(sh.at("documents")),
                                     json_int<std::uint64_t>(sh.at("tokens"))});
        }
        return m;
    } catch (const json::exception& e) {
        MESHLM_INVALID(path, " is malformed: ", e.what());
    }
}

void check_prepared_tokenizer(const std::string& dir, const Tokenizer& tok,
                              const std::string& spec) {
    PreparedMeta m = read_prepared_meta(dir);
    std::string hash = tokenizer_fingerprint(tok, spec);
    // By content (the fingerprint), not by name: a tokenizer file's name is its path.
    if (m.vocab_size == tok.vocab_size() && m.eot_id == tok.eot_id() && m.tokenizer_hash == hash)
        return;
    MESHLM_INVALID("data in ", dir, " was prepared with tokenizer '", m.tokenizer_spec, "' (",
                   m.tokenizer_name, ", vocab ", m.vocab_size, ", ", m.tokenizer_hash,
                   ") but the model is configured with '", spec, "' (", tok.name(), ", vocab ",
                   tok.vocab_size(), ", ", hash,
                   "); re-run `meshlm prepare` with this tokenizer or configure the one the data "
                   "was prepared with");
}

}  // namespace meshlm
