// The pre-tokenizers of pre_tokenizers.h.
#include "meshlm/data/hf/pre_tokenizers.h"

#include <string>
#include <vector>

#include "meshlm/data/hf/regex.h"
#include "meshlm/data/hf/split.h"
#include "meshlm/data/hf/unicode_norm.h"
#include "meshlm/data/pretokenize.h"

namespace meshlm::hf {

namespace {

constexpr const char* kSupported =
    "Split, ByteLevel, Metaspace, Digits, Punctuation, Whitespace, WhitespaceSplit, "
    "BertPreTokenizer, Sequence";

class RegexSplit : public PreTokenizer {
  public:
    RegexSplit(const std::string& pattern, SplitBehavior b, bool invert, const Where& w)
        : re_(pattern, w.str()), behavior_(b), invert_(invert) {}
    void split(const Piece& in, PieceSink out) const override {
        split_by_matches(in, re_.find_all(in.text), behavior_, invert_, out);
    }

  private:
    Regex re_;
    SplitBehavior behavior_;
    bool invert_;
};

// Split(GPT-2 pattern, Isolated): the hand-written scanner (its pieces cover the text).
class Gpt2Split : public PreTokenizer {
  public:
    void split(const Piece& in, PieceSink out) const override {
        std::size_t pos = 0;
        while (pos < in.text.size()) {
            const std::size_t n = gpt2_piece_length(in.text, pos);
            out(Piece{in.text.substr(pos, n), in.at_start && pos == 0});
            pos += n;
        }
    }
};

// Raw bytes stay raw (pre_tokenizers.h); add_prefix_space and the GPT-2 regex remain.
class ByteLevel : public PreTokenizer {
  public:
    ByteLevel(bool prefix_space, bool use_regex) : prefix_(prefix_space), regex_(use_regex) {}
    void split(const Piece& in, PieceSink out) const override {
        std::string owned;
        Piece p = in;
        if (prefix_ && (p.text.empty() || p.text.front() != ' ')) {
            owned.reserve(p.text.size() + 1);
            owned.push_back(' ');
            owned.append(p.text);
            p.text = owned;
        }
        if (regex_)
            gpt2_.split(p, out);
        else
            out(p);
    }

  private:
    bool prefix_, regex_;
    Gpt2Split gpt2_;
};

enum class Prepend { Always, First, Never };

class Metaspace : public PreTokenizer {
  public:
    Metaspace(char32_t rep, Prepend scheme, bool split) : scheme_(scheme), split_(split) {
        append_utf8(rep, rep_);
    }
    void split(const Piece& in, PieceSink out) const override {
        std::string s;
        s.reserve(in.text.size() + rep_.size() + 8);
        const bool starts = in.text.substr(0, 1) == " " || in.text.substr(0, rep_.size()) == rep_;
        if ((scheme_ == Prepend::Always || (scheme_ == Prepend::First && in.at_start)) && !starts)
            s += rep_;
        for (char c : in.text)
            if (c == ' ')
                s += rep_;
            else
                s.push_back(c);
        const Piece p{s, in.at_start};
        if (!split_) return out(p);
        Matches m;
        for (std::size_t i = s.find(rep_); i != std::string::npos;
             i = s.find(rep_, i + rep_.size()))
            m.emplace_back(i, i + rep_.size());
        split_by_matches(p, m, SplitBehavior::MergedWithNext, false, out);
    }

  private:
    std::string rep_;
    Prepend scheme_;
    bool split_;
};

// A character predicate as the pattern (Digits, Punctuation, WhitespaceSplit).
template <bool (*Pred)(char32_t)>
class CharSplit : public PreTokenizer {
  public:
    explicit CharSplit(SplitBehavior b) : behavior_(b) {}
    void split(const Piece& in, PieceSink out) const override {
        split_by_matches(in, char_matches(in.text, Pred), behavior_, false, out);
    }

  private:
    SplitBehavior behavior_;
};

// Whitespace: runs of \w and runs of [^\w\s] (the regex \w+|[^\w\s]+), whitespace dropped.
class Whitespace : public PreTokenizer {
  public:
    void split(const Piece& in, PieceSink out) const override {
        std::size_t start = 0;
        int cls = 0;  // 0 space, 1 word, 2 other
        auto flush = [&](std::size_t end) {
            if (cls != 0 && end > start)
                out(Piece{in.text.substr(start, end - start), in.at_start && start == 0});
        };
        for_each_char(in.text, [&](char32_t c, std::size_t at) {
            const int k = is_word_char(c) ? 1 : is_whitespace(c) ? 0 : 2;
            if (k != cls) {
                flush(at);
                start = at;
                cls = k;
            }
        });
        flush(in.text.size());
    }
};

class Sequence : public PreTokenizer {
  public:
    explicit Sequence(std::vector<std::unique_ptr<PreTokenizer>> s) : steps_(std::move(s)) {}
    void split(const Piece& in, PieceSink out) const override { run(0, in, out); }

  private:
    void run(std::size_t i, const Piece& p, PieceSink out) const {
        if (i == steps_.size()) return out(p);
        steps_[i]->split(p, [&](const Piece& q) { run(i + 1, q, out); });
    }
    std::vector<std::unique_ptr<PreTokenizer>> steps_;
};

Prepend parse_prepend(const Json& j, const Where& w) {
    if (!j.contains("prepend_scheme"))  // older files: add_prefix_space
        return json_bool(j, "add_prefix_space", true, w) ? Prepend::Always : Prepend::Never;
    const std::string s = json_string(j, "prepend_scheme", "always", w);
    if (s == "always") return Prepend::Always;
    if (s == "first") return Prepend::First;
    if (s == "never") return Prepend::Never;
    w.at("prepend_scheme").fail("\"", s, "\" is not one of always, first, never");
}

std::unique_ptr<PreTokenizer> parse_split(const Json& j, const Where& w) {
    const std::string pattern = json_pattern(j, "pattern", w);
    const SplitBehavior b =
        parse_split_behavior(json_string(j, "behavior", "", w), w.at("behavior"));
    const bool invert = json_bool(j, "invert", false, w);
    if (pattern == kGpt2Pattern && b == SplitBehavior::Isolated && !invert)
        return std::make_unique<Gpt2Split>();
    return std::make_unique<RegexSplit>(pattern, b, invert, w.at("pattern"));
}

std::unique_ptr<PreTokenizer> parse_one(const Json& j, const Where& w, bool& byte_level) {
    const std::string type = json_type(j, w);
    if (byte_level)
        w.fail("a pre-tokenizer after ByteLevel is not supported (ByteLevel must be last)");
    if (type == "Split") return parse_split(j, w);
    if (type == "ByteLevel") {
        byte_level = true;
        return std::make_unique<ByteLevel>(json_bool(j, "add_prefix_space", true, w),
                                           json_bool(j, "use_regex", true, w));
    }
    if (type == "Metaspace")
        return std::make_unique<Metaspace>(json_char(j, "replacement", U'\u2581', w),
                                           parse_prepend(j, w), json_bool(j, "split", true, w));
    if (type == "Digits") {
        const bool each = json_bool(j, "individual_digits", false, w);
        return std::make_unique<CharSplit<is_numeric>>(each ? SplitBehavior::Isolated
                                                            : SplitBehavior::Contiguous);
    }
    if (type == "Punctuation")
        return std::make_unique<CharSplit<is_punctuation>>(
            parse_split_behavior(json_string(j, "behavior", "Isolated", w), w.at("behavior")));
    if (type == "Whitespace") return std::make_unique<Whitespace>();
    if (type == "WhitespaceSplit")
        return std::make_unique<CharSplit<is_whitespace>>(SplitBehavior::Removed);
    if (type == "BertPreTokenizer") {
        std::vector<std::unique_ptr<PreTokenizer>> s;
        s.push_back(std::make_unique<CharSplit<is_whitespace>>(SplitBehavior::Removed));
        s.push_back(std::make_unique<CharSplit<is_punctuation>>(SplitBehavior::Isolated));
        return std::make_unique<Sequence>(std::move(s));
    }
    if (type == "Sequence") {
        const Where ws = w.at("pretokenizers");
        if (!j.contains("pretokenizers") || !j["pretokenizers"].is_array())
            ws.fail("expected an array of pre-tokenizers");
        std::vector<std::unique_ptr<PreTokenizer>> steps;
        for (std::size_t i = 0; i < j["pretokenizers"].size(); ++i)
            steps.push_back(parse_one(j["pretokenizers"][i], ws.at(i), byte_level));
        return std::make_unique<Sequence>(std::move(steps));
    }
    w.refuse("pre_tokenizer", type, kSupported);
}

}  // namespace

std::unique_ptr<PreTokenizer> parse_pre_tokenizer(const Json& j, const Where& w, bool& byte_level) {
    byte_level = false;
    if (j.is_null()) return nullptr;
    return parse_one(j, w, byte_level);
}

}  // namespace meshlm::hf
