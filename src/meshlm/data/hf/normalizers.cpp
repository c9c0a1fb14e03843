// The normalizers of normalizers.h.
#include "meshlm/data/hf/normalizers.h"

#include <vector>

#include "meshlm/data/hf/regex.h"
#include "meshlm/data/hf/unicode_norm.h"
#include "meshlm/data/hf/utf8.h"

namespace meshlm::hf {

namespace {

constexpr const char* kSupported =
    "NFC, NFD, NFKC, NFKD, Lowercase, Strip, StripAccents, Replace, Prepend, Sequence";

class Unicode : public Normalizer {
  public:
    explicit Unicode(NormForm f) : form_(f) {}
    void normalize(std::string& t) const override { t = unicode_normalize(t, form_); }

  private:
    NormForm form_;
};

class Lowercase : public Normalizer {
  public:
    void normalize(std::string& t) const override { t = unicode_lowercase(t); }
};

// Removes leading / trailing whitespace (Rust char::is_whitespace).
class Strip : public Normalizer {
  public:
    Strip(bool left, bool right) : left_(left), right_(right) {}
    void normalize(std::string& t) const override {
        std::size_t b = 0, e = 0;  // first kept byte, end of the last kept character
        bool seen = false;
        for_each_char(t, [&](char32_t c, std::size_t at) {
            if (is_whitespace(c)) return;
            if (!seen) b = at, seen = true;
            char32_t d;
            e = at + next_char(t, at, d);
        });
        if (!seen) {
            if (left_ || right_) t.clear();
            return;
        }
        t = t.substr(left_ ? b : 0, (right_ ? e : t.size()) - (left_ ? b : 0));
    }

  private:
    bool left_, right_;
};

class StripAccents : public Normalizer {
  public:
    void normalize(std::string& t) const override {
        std::string out;
        out.reserve(t.size());
        for_each_char(t, [&](char32_t c, std::size_t) {
            if (!is_mark(c)) append_utf8(c, out);
        });
        t = std::move(out);
    }
};

class Replace : public Normalizer {
  public:
    Replace(const std::string& pattern, std::string content, const Where& w)
        : re_(pattern, w.str()), content_(std::move(content)) {}
    void normalize(std::string& t) const override { t = re_.replace_all(t, content_); }

  private:
    Regex re_;
    std::string content_;
};

class Prepend : public Normalizer {
  public:
    explicit Prepend(std::string p) : p_(std::move(p)) {}
    void normalize(std::string& t) const override {
        if (!t.empty()) t.insert(0, p_);
    }

  private:
    std::string p_;
};

class Sequence : public Normalizer {
  public:
    explicit Sequence(std::vector<std::unique_ptr<Normalizer>> s) : steps_(std::move(s)) {}
    void normalize(std::string& t) const override {
        for (const auto& s : steps_) s->normalize(t);
    }

  private:
    std::vector<std::unique_ptr<Normalizer>> steps_;
};

}  // namespace

std::unique_ptr<Normalizer> parse_normalizer(const Json& j, const Where& w) {
    if (j.is_null()) return nullptr;
    const std::string type = json_type(j, w);
    if (type == "NFC") return std::make_unique<Unicode>(NormForm::NFC);
    if (type == "NFD") return std::make_unique<Unicode>(NormForm::NFD);
    if (type == "NFKC") return std::make_unique<Unicode>(NormForm::NFKC);
    if (type == "NFKD") return std::make_unique<Unicode>(NormForm::NFKD);
    if (type == "Lowercase") return std::make_unique<Lowercase>();
    if (type == "StripAccents") return std::make_unique<StripAccents>();
    if (type == "Strip")
        return std::make_unique<Strip>(json_bool(j, "strip_left", true, w),
                                       json_bool(j, "strip_right", true, w));
    if (type == "Replace")
        return std::make_unique<Replace>(json_pattern(j, "pattern", w),
                                         json_string(j, "content", "", w), w);
    if (type == "Prepend") return std::make_unique<Prepend>(json_string(j, "prepend", "", w));
    if (type == "Sequence") {
        const Where ws = w.at("normalizers");
        if (!j.contains("normalizers") || !j["normalizers"].is_array())
            ws.fail("expected an array of normalizers");
        std::vector<std::unique_ptr<Normalizer>> steps;
        for (std::size_t i = 0; i < j["normalizers"].size(); ++i)
            if (auto n = parse_normalizer(j["normalizers"][i], ws.at(i)))
                steps.push_back(std::move(n));
        return std::make_unique<Sequence>(std::move(steps));
    }
    w.refuse("normalizer", type, kSupported);
}

}  // namespace meshlm::hf
