#include "meshlm/data/corpus_reader.h"

#include <glob.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "meshlm/core/error.h"

namespace fs = std::filesystem;

namespace meshlm {
namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
    return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// A file's bytes, decompressed on the fly when it starts with a gzip or zstd magic number.
class ByteSource {
  public:
    explicit ByteSource(const std::string& path) : path_(path) {
        f_ = std::fopen(path.c_str(), "rb");
        if (!f_) MESHLM_INVALID("cannot read ", path, ": ", std::strerror(errno));
        unsigned char magic[4] = {};
        std::size_t n = std::fread(magic, 1, 4, f_);
        std::rewind(f_);
        if (n >= 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
            std::fclose(f_);
            f_ = nullptr;
            gz_ = gzopen(path.c_str(), "rb");
            if (!gz_) MESHLM_INVALID("cannot open gzip file ", path);
            gzbuffer(gz_, 1 << 17);
        } else if (n == 4 && magic[0] == 0x28 && magic[1] == 0xb5 && magic[2] == 0x2f &&
                   magic[3] == 0xfd) {
            zstd_ = ZSTD_createDStream();
            in_.resize(ZSTD_DStreamInSize());
            in_buf_ = {in_.data(), 0, 0};
        }
    }
    ~ByteSource() {
        if (f_) std::fclose(f_);
        if (gz_) gzclose(gz_);
        if (zstd_) ZSTD_freeDStream(zstd_);
    }
    ByteSource(const ByteSource&) = delete;
    ByteSource& operator=(const ByteSource&) = delete;

    // Reads up to n bytes; 0 at the end of the data.
    std::size_t read(char* buf, std::size_t n) {
        if (gz_) {
            int got = gzread(gz_, buf, static_cast<unsigned>(std::min<std::size_t>(n, 1 << 30)));
            int err = Z_OK;
            const char* msg = gzerror(gz_, &err);
            if (got < 0 || (err != Z_OK && err != Z_STREAM_END))
                MESHLM_INVALID("corrupt or truncated gzip file ", path_, ": ", msg);
            disk_done_ = static_cast<std::uint64_t>(gzoffset(gz_));
            return static_cast<std::size_t>(got);
        }
        if (zstd_) return read_zstd(buf, n);
        std::size_t got = std::fread(buf, 1, n, f_);
        if (got == 0 && std::ferror(f_))
            MESHLM_INVALID("cannot read ", path_, ": ", std::strerror(errno));
        disk_done_ += got;
        return got;
    }
    std::uint64_t disk_bytes_done() const { return disk_done_; }

  private:
    std::size_t read_zstd(char* buf, std::size_t n) {
        ZSTD_outBuffer out{buf, n, 0};
        while (out.pos == 0) {
            if (in_buf_.pos == in_buf_.size) {
                std::size_t got = std::fread(in_.data(), 1, in_.size(), f_);
                disk_done_ += got;
                in_buf_ = {in_.data(), got, 0};
                if (got == 0) {
                    // A frame still open at the end of the file means it was cut short.
                    if (!frame_done_) MESHLM_INVALID("truncated zstd file ", path_);
                    return 0;
                }
            }
            std::size_t ret = ZSTD_decompressStream(zstd_, &out, &in_buf_);
            if (ZSTD_isError(ret))
                MESHLM_INVALID("corrupt zstd file ", path_, ": ", ZSTD_getErrorName(ret));
            frame_done_ = ret == 0;
        }
        return out.pos;
    }

    std::string path_;
    std::FILE* f_ = nullptr;
    gzFile gz_ = nullptr;
    ZSTD_DStream* zstd_ = nullptr;
    std::vector<char> in_;
    ZSTD_inBuffer in_buf_{};
    bool frame_done_ = true;
    std::uint64_t disk_done_ = 0;
};

// Splits a ByteSource into lines (without '\n').
class LineReader {
  public:
    explicit LineReader(ByteSource& src) : src_(src), buf_(1 << 17) {}
    bool next(std::string& line) {
        line.clear();
        for (;;) {
            if (pos_ == end_) {
                end_ = src_.read(buf_.data(), buf_.size());
                pos_ = 0;
                if (end_ == 0) return !line.empty() || std::exchange(pending_, false);
            }
            pending_ = true;
            const char* start = buf_.data() + pos_;
            const void* nl = std::memchr(start, '\n', end_ - pos_);
            if (nl) {
                std::size_t len = static_cast<const char*>(nl) - start;
                line.append(start, len);
                pos_ += len + 1;
                pending_ = false;
                return true;
            }
            line.append(start, end_ - pos_);
            pos_ = end_;
        }
    }

  private:
    ByteSource& src_;
    std::vector<char> buf_;
    std::size_t pos_ = 0, end_ = 0;
    bool pending_ = false;  // bytes of an unterminated last line were seen
};

bool has_glob_chars(const std::string& s) {
    return s.find_first_of("*?[") != std::string::npos;
}

CorpusFormat format_of(const std::string& path, CorpusFormat f) {
    if (f != CorpusFormat::Auto) return f;
    std::string name = fs::path(path).filename().string();
    for (const char* z : {".gz", ".zst"})
        if (ends_with(name, z)) name.resize(name.size() - std::strlen(z));
    for (const char* j : {".jsonl", ".json", ".ndjson"})
        if (ends_with(name, j)) return CorpusFormat::Jsonl;
    return CorpusFormat::Text;
}

}  // namespace

CorpusFormat parse_corpus_format(const std::string& s) {
    if (s == "auto") return CorpusFormat::Auto;
    if (s == "text") return CorpusFormat::Text;
    if (s == "jsonl") return CorpusFormat::Jsonl;
    MESHLM_INVALID("unknown corpus format '", s, "'; valid: auto, text, jsonl");
}

const char* corpus_format_name(CorpusFormat f) {
    switch (f) {
        case CorpusFormat::Text:
            return "text";
        case CorpusFormat::Jsonl:
            return "jsonl";
        default:
            return "auto";
    }
}

std::vector<std::string> expand_inputs(const std::vector<std::string>& inputs) {
    if (inputs.empty()) MESHLM_INVALID("no corpus inputs given");
    std::vector<std::string> files;
    std::set<fs::path> seen;
    auto add = [&](const fs::path& p) {
        std::error_code ec;
        fs::path c = fs::canonical(p, ec);
        if (ec) MESHLM_INVALID("cannot resolve ", p.string(), ": ", ec.message());
        if (seen.insert(c).second) files.push_back(p.string());
    };
    for (const auto& in : inputs) {
        std::error_code ec;
        if (fs::is_directory(in, ec)) {
            std::vector<fs::path> found;
            for (const auto& e : fs::recursive_directory_iterator(in))
                if (e.is_regular_file()) found.push_back(e.path());
            std::sort(found.begin(), found.end());
            for (const auto& p : found) add(p);
        } else if (fs::exists(in, ec)) {
            add(in);
        } else if (has_glob_chars(in)) {
            glob_t g{};
            int rc = ::glob(in.c_str(), 0, nullptr, &g);
            std::vector<std::string> matched(g.gl_pathv, g.gl_pathv + (rc == 0 ? g.gl_pathc : 0));
            ::globfree(&g);
            if (matched.empty()) MESHLM_INVALID("input pattern '", in, "' matches no files");
            std::sort(matched.begin(), matched.end());
            for (const auto& m : matched) {
                if (!fs::is_directory(m)) {
                    add(m);
                    continue;
                }
                for (const auto& f : expand_inputs({m})) add(f);
            }
        } else {
            MESHLM_INVALID("input '", in, "' does not exist");
        }
    }
    return files;
}

void split_text_documents(std::string_view text, const std::string& separator,
                          std::vector<std::string>& docs) {
    std::string doc;
    std::size_t pos = 0;
    auto flush = [&] {
        if (doc.find_first_not_of(" \t\r\n") != std::string::npos) docs.push_back(doc);
        doc.clear();
    };
    while (pos < text.size()) {
        std::size_t nl = text.find('\n', pos);
        std::size_t end = nl == std::string_view::npos ? text.size() : nl + 1;
        std::string_view line = text.substr(pos, (nl == std::string_view::npos ? end : nl) - pos);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (line == separator)
            flush();
        else
            doc.append(text.substr(pos, end - pos));
        pos = end;
    }
    flush();
}

std::string read_file_decompressed(const std::string& path) {
    ByteSource src(path);
    std::string out;
    std::vector<char> buf(1 << 20);
    while (std::size_t n = src.read(buf.data(), buf.size())) out.append(buf.data(), n);
    return out;
}

struct CorpusReader::Impl {
    std::vector<std::string> inputs, files;
    CorpusReadOptions opt;
    CorpusStats stats;
    std::uint64_t total_bytes = 0, done_before = 0;  // on-disk bytes of finished files
    std::size_t next_file = 0;
    std::unique_ptr<ByteSource> src;  // the JSONL file being read
    std::unique_ptr<LineReader> lines;
    std::string path, line;
    std::uint64_t line_no = 0;
    std::deque<std::string> queued;  // documents of the text file being read

    // Opens the next file; false when none is left.
    bool open_next() {
        lines.reset();
        if (src) done_before += fs::file_size(path);
        src.reset();
        while (next_file < files.size()) {
            path = files[next_file++];
            stats.files++;
            if (format_of(path, opt.format) == CorpusFormat::Jsonl) {
                src = std::make_unique<ByteSource>(path);
                lines = std::make_unique<LineReader>(*src);
                line_no = 0;
                return true;
            }
            std::string text = read_file_decompressed(path);
            done_before += fs::file_size(path);
            if (text.find('\0') != std::string::npos) {
                stats.skipped_files++;
                continue;
            }
            if (opt.separator.empty()) {
                if (text.find_first_not_of(" \t\r\n") != std::string::npos)
                    queued.push_back(std::move(text));
            } else {
                std::vector<std::string> docs;
                split_text_documents(text, opt.separator, docs);
                for (auto& d : docs) queued.push_back(std::move(d));
            }
            if (!queued.empty()) return true;
        }
        return false;
    }

    // Parses the current JSONL line; false (counted) when malformed and skipping.
    bool parse_record(std::string& doc) {
        auto bad = [&](const std::string& why) {
            if (!opt.skip_bad_lines)
                MESHLM_INVALID(path, ":", line_no, ": ", why,
                               " (--skip-bad-lines counts and skips such records)");
            stats.bad_lines++;
            return false;
        };
        auto j = nlohmann::json::parse(line, nullptr, false);
        if (j.is_discarded()) return bad("malformed JSON");
        if (!j.is_object()) return bad("record is not a JSON object");
        auto it = j.find(opt.field);
        if (it == j.end()) return bad("record has no field '" + opt.field + "'");
        if (!it->is_string()) return bad("field '" + opt.field + "' is not a string");
        doc = it->get<std::string>();
        return true;
    }

    bool next(std::string& doc) {
        for (;;) {
            if (!queued.empty()) {
                doc = std::move(queued.front());
                queued.pop_front();
                return true;
            }
            if (lines) {
                while (lines->next(line)) {
                    line_no++;
                    if (!line.empty() && line.back() == '\r') line.pop_back();
                    if (line.find_first_not_of(" \t") == std::string::npos) continue;
                    if (parse_record(doc) && !doc.empty()) return true;
                }
            }
            if (!open_next()) return false;
        }
    }
};

CorpusReader::CorpusReader(const std::vector<std::string>& inputs, CorpusReadOptions opt)
    : impl_(std::make_unique<Impl>()) {
    impl_->inputs = inputs;
    impl_->opt = std::move(opt);
    impl_->files = expand_inputs(inputs);
    for (const auto& f : impl_->files) impl_->total_bytes += fs::file_size(f);
}

CorpusReader::~CorpusReader() = default;

bool CorpusReader::next(std::string& doc) {
    if (!impl_->next(doc)) {
        if (impl_->stats.documents == 0) {
            std::string names;
            for (const auto& in : impl_->inputs) names += (names.empty() ? "'" : ", '") + in + "'";
            MESHLM_INVALID("corpus ", names, " holds no documents (", impl_->stats.files,
                           " files read, ", impl_->stats.skipped_files, " skipped as binary, ",
                           impl_->stats.bad_lines, " bad JSONL lines)");
        }
        return false;
    }
    impl_->stats.documents++;
    impl_->stats.bytes += doc.size();
    return true;
}

const CorpusStats& CorpusReader::stats() const {
    return impl_->stats;
}
const std::vector<std::string>& CorpusReader::files() const {
    return impl_->files;
}
std::uint64_t CorpusReader::input_bytes_total() const {
    return impl_->total_bytes;
}
std::uint64_t CorpusReader::input_bytes_done() const {
    return impl_->done_before + (impl_->src ? impl_->src->disk_bytes_done() : 0);
}

}  // namespace meshlm
