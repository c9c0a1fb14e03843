// The decoders of decoders.h.
#include "meshlm/data/hf/decoders.h"

#include "meshlm/data/hf/byte_level.h"
#include "meshlm/data/hf/regex.h"
#include "meshlm/data/hf/utf8.h"

namespace meshlm::hf {

namespace {

constexpr const char* kSupported =
    "ByteLevel, Metaspace, ByteFallback, Fuse, Strip, Replace, WordPiece, Sequence";

class ByteLevel : public Decoder {
  public:
    void decode_chain(std::vector<std::string>& t) const override {
        std::string all;
        for (const auto& s : t) all += decode_byte_level_token(s);
        t.assign(1, std::move(all));
    }
};

class Metaspace : public Decoder {
  public:
    Metaspace(char32_t rep, bool strip_first) : strip_first_(strip_first) {
        append_utf8(rep, rep_);
    }
    void decode_chain(std::vector<std::string>& t) const override {
        for (std::size_t i = 0; i < t.size(); ++i) {
            std::string out;
            for (std::size_t k = 0; k < t[i].size();) {
                if (t[i].compare(k, rep_.size(), rep_) == 0) {
                    if (!(i == 0 && strip_first_)) out.push_back(' ');
                    k += rep_.size();
                } else {
                    out.push_back(t[i][k++]);
                }
            }
            t[i] = std::move(out);
        }
    }

  private:
    std::string rep_;
    bool strip_first_;
};

// Runs of <0xXX> tokens become their bytes (kept raw when not valid UTF-8, one token a byte).
class ByteFallback : public Decoder {
  public:
    void decode_chain(std::vector<std::string>& t) const override {
        std::vector<std::string> out;
        std::string bytes;
        std::size_t n_bytes = 0;
        auto flush = [&] {
            if (n_bytes == 0) return;
            if (is_valid_utf8(bytes))
                out.push_back(bytes);
            else
                for (char c : bytes) out.emplace_back(1, c);
            bytes.clear();
            n_bytes = 0;
        };
        for (auto& s : t) {
            int v = -1;
            if (s.size() == 6 && s.compare(0, 3, "<0x") == 0 && s[5] == '>')
                v = hex_byte(s[3], s[4]);
            if (v >= 0) {
                bytes.push_back(static_cast<char>(v));
                ++n_bytes;
                continue;
            }
            flush();
            out.push_back(std::move(s));
        }
        flush();
        t = std::move(out);
    }

  private:
    static int hex_byte(char a, char b) {
        auto h = [](char c) {
            if (c >= '0' && c <= '9') return c - '0';
            if (c >= 'a' && c <= 'f') return c - 'a' + 10;
            if (c >= 'A' && c <= 'F') return c - 'A' + 10;
            return -1;
        };
        return h(a) < 0 || h(b) < 0 ? -1 : h(a) * 16 + h(b);
    }
};

class Fuse : public Decoder {
  public:
    void decode_chain(std::vector<std::string>& t) const override {
        std::string all;
        for (const auto& s : t) all += s;
        t.assign(1, std::move(all));
    }
};

// HF's Strip, including its quirk: after start_cut characters it keeps (byte length - cuts)
// characters, so a trailing cut is lost on a token with multi-byte characters.
class Strip : public Decoder {
  public:
    Strip(char32_t c, std::size_t start, std::size_t stop) : c_(c), start_(start), stop_(stop) {}
    void decode_chain(std::vector<std::string>& t) const override {
        for (auto& s : t) {
            std::vector<char32_t> cs;
            for_each_char(s, [&](char32_t c, std::size_t) { cs.push_back(c); });
            std::size_t a = 0, z = 0;
            while (a < cs.size() && a < start_ && cs[a] == c_) ++a;
            while (z < cs.size() && z < stop_ && cs[cs.size() - 1 - z] == c_) ++z;
            const std::size_t keep = s.size() - a - z;
            std::string out;
            for (std::size_t i = a; i < cs.size() && i - a < keep; ++i) append_utf8(cs[i], out);
            s = std::move(out);
        }
    }

  private:
    char32_t c_;
    std::size_t start_, stop_;
};

class Replace : public Decoder {
  public:
    Replace(const std::string& pattern, std::string content, const Where& w)
        : re_(pattern, w.str()), content_(std::move(content)) {}
    void decode_chain(std::vector<std::string>& t) const override {
        for (auto& s : t) s = re_.replace_all(s, content_);
    }

  private:
    Regex re_;
    std::string content_;
};

class WordPiece : public Decoder {
  public:
    WordPiece(std::string prefix, bool cleanup) : prefix_(std::move(prefix)), cleanup_(cleanup) {}
    void decode_chain(std::vector<std::string>& t) const override {
        for (std::size_t i = 0; i < t.size(); ++i) {
            if (i != 0) {
                if (t[i].compare(0, prefix_.size(), prefix_) == 0)
                    t[i].erase(0, prefix_.size());
                else
                    t[i].insert(0, " ");
            }
            if (cleanup_) t[i] = cleanup(t[i]);
        }
    }

  private:
    static std::string cleanup(std::string s) {
        static const std::pair<const char*, const char*> kSubs[] = {
            {" .", "."},   {" ?", "?"},     {" !", "!"},    {" ,", ","},
            {" ' ", "'"},  {" n't", "n't"}, {" 'm", "'m"},  {" do not", " don't"},
            {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
        for (const auto& [from, to] : kSubs) {
            std::string out;
            const std::string_view f(from);
            std::size_t prev = 0;
            for (std::size_t i = s.find(f); i != std::string::npos; i = s.find(f, prev)) {
                out.append(s, prev, i - prev).append(to);
                prev = i + f.size();
            }
            s = out.append(s, prev, std::string::npos);
        }
        return s;
    }
    std::string prefix_;
    bool cleanup_;
};

class Sequence : public Decoder {
  public:
    explicit Sequence(std::vector<std::unique_ptr<Decoder>> s) : steps_(std::move(s)) {}
    void decode_chain(std::vector<std::string>& t) const override {
        for (const auto& s : steps_) s->decode_chain(t);
    }

  private:
    std::vector<std::unique_ptr<Decoder>> steps_;
};

bool metaspace_strips_first(const Json& j, const Where& w) {
    if (!j.contains("prepend_scheme")) return json_bool(j, "add_prefix_space", true, w);
    return json_string(j, "prepend_scheme", "always", w) != "never";
}

}  // namespace

std::unique_ptr<Decoder> parse_decoder(const Json& j, const Where& w) {
    if (j.is_null()) return nullptr;
    const std::string type = json_type(j, w);
    if (type == "ByteLevel") return std::make_unique<ByteLevel>();
    if (type == "Metaspace")
        return std::make_unique<Metaspace>(json_char(j, "replacement", U'\u2581', w),
                                           metaspace_strips_first(j, w));
    if (type == "ByteFallback") return std::make_unique<ByteFallback>();
    if (type == "Fuse") return std::make_unique<Fuse>();
    if (type == "Strip")
        return std::make_unique<Strip>(json_char(j, "content", U' ', w),
                                       static_cast<std::size_t>(json_int(j, "start", 0, w)),
                                       static_cast<std::size_t>(json_int(j, "stop", 0, w)));
    if (type == "Replace")
        return std::make_unique<Replace>(json_pattern(j, "pattern", w),
                                         json_string(j, "content", "", w), w);
    if (type == "WordPiece")
        return std::make_unique<WordPiece>(json_string(j, "prefix", "##", w),
                                           json_bool(j, "cleanup", true, w));
    if (type == "Sequence") {
        const Where ws = w.at("decoders");
        if (!j.contains("decoders") || !j["decoders"].is_array())
            ws.fail("expected an array of decoders");
        std::vector<std::unique_ptr<Decoder>> steps;
        for (std::size_t i = 0; i < j["decoders"].size(); ++i)
            if (auto d = parse_decoder(j["decoders"][i], ws.at(i))) steps.push_back(std::move(d));
        return std::make_unique<Sequence>(std::move(steps));
    }
    w.refuse("decoder", type, kSupported);
}

}  // namespace meshlm::hf
