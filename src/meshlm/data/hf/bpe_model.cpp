// The tokenizer.json BPE model as HF tokenizers 0.23 runs it (models/bpe/model.rs): a piece is
// cut into characters (raw bytes when byte-level), each looked up in the vocabulary; a
// character that is not there becomes its <0xXX> byte tokens (byte_fallback) or the unknown
// token (consecutive ones fused with fuse_unk; dropped without unk_token); then the merges of
// BpeMerges (data/bpe_merges.h, shared with the .tiktoken tokenizer). ignore_merges: a piece
// that is a token is that token. dropout, continuing_subword_prefix and end_of_word_suffix are
// refused by name.
#include "meshlm/data/bpe_merges.h"
#include "meshlm/data/hf/byte_level.h"
#include "meshlm/data/hf/model.h"
#include "meshlm/data/hf/utf8.h"

namespace meshlm::hf {

namespace {

class BpeModel : public Model {
  public:
    BpeModel(const Json& j, const Where& w, bool byte_level);
    void tokenize(std::string_view piece, std::vector<std::int32_t>& out) const override;
    std::vector<std::pair<std::string, std::int32_t>> vocab() const override { return entries_; }

  private:
    void read_merges(const Json& merges, const Where& w);
    std::int32_t id_of(std::string_view raw) const {
        auto it = ids_.find(raw);
        return it == ids_.end() ? -1 : it->second;
    }
    // Appends the symbols of the character s (not in the vocabulary) to syms.
    void unknown_char(std::string_view s, std::vector<std::int32_t>& syms,
                      std::int32_t& pending_unk) const;

    bool byte_level_;
    std::vector<std::pair<std::string, std::int32_t>> entries_;
    StringIdMap ids_;           // raw form (bytes when byte-level) -> id
    std::int32_t single_[256];  // one-byte token ids (-1: none)
    ByteFallbackIds fallback_;
    bool byte_fallback_, fuse_unk_, ignore_merges_;
    std::int32_t unk_id_ = -1;
    BpeMerges merges_;
};

BpeModel::BpeModel(const Json& j, const Where& w, bool byte_level)
    : byte_level_(byte_level), fallback_([](std::string_view) { return -1; }) {
    if (j.contains("dropout") && !j["dropout"].is_null() && j["dropout"].get<double>() > 0)
        w.at("dropout").fail("BPE dropout is not supported (must be null)");
    for (const char* k : {"continuing_subword_prefix", "end_of_word_suffix"})
        if (!json_string(j, k, "", w).empty())
            w.at(k).fail("is not supported (must be null or empty)");
    byte_fallback_ = json_bool(j, "byte_fallback", false, w);
    fuse_unk_ = json_bool(j, "fuse_unk", false, w);
    ignore_merges_ = json_bool(j, "ignore_merges", false, w);
    if (!j.contains("vocab") || !j["vocab"].is_object()) w.at("vocab").fail("expected an object");
    for (const auto& [tok, id] : j["vocab"].items()) {
        if (!id.is_number_integer() || id.get<long long>() < 0)
            w.at("vocab").fail("token \"", tok, "\" has no valid id");
        entries_.emplace_back(tok, id.get<std::int32_t>());
        ids_[byte_level ? unmap_byte_level(tok) : tok] = id.get<std::int32_t>();
    }
    for (int b = 0; b < 256; ++b) single_[b] = id_of(std::string(1, static_cast<char>(b)));
    fallback_ = ByteFallbackIds([&](std::string_view name) { return id_of(name); });
    const std::string unk = json_string(j, "unk_token", "", w);
    if (!unk.empty()) {
        unk_id_ = id_of(byte_level ? unmap_byte_level(unk) : unk);
        if (unk_id_ < 0) w.at("unk_token").fail("\"", unk, "\" is not in the vocabulary");
    }
    if (!j.contains("merges") || !j["merges"].is_array()) w.at("merges").fail("expected an array");
    read_merges(j["merges"], w.at("merges"));
}

void BpeModel::read_merges(const Json& merges, const Where& w) {
    std::int32_t rank = 0;
    for (std::size_t i = 0; i < merges.size(); ++i) {
        const Json& e = merges[i];
        std::string a, b;
        if (e.is_string()) {
            const std::string s = e.get<std::string>();
            if (s.rfind("#version", 0) == 0) continue;
            const auto sp = s.find(' ');
            if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos)
                w.at(i).fail("\"", s, "\": expected two tokens separated by one space");
            a = s.substr(0, sp);
            b = s.substr(sp + 1);
        } else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {
            a = e[0].get<std::string>();
            b = e[1].get<std::string>();
        } else {
            w.at(i).fail(e.dump(), ": expected \"a b\" or [\"a\", \"b\"]");
        }
        auto id = [&](const std::string& tok) {
            const std::int32_t v = id_of(byte_level_ ? unmap_byte_level(tok) : tok);
            if (v < 0) w.at(i).fail("token \"", tok, "\" is not in the vocabulary");
            return v;
        };
        const std::int32_t left = id(a), right = id(b);
        merges_.add(left, right, rank++, id(a + b));
    }
    merges_.finish();
}

void BpeModel::unknown_char(std::string_view s, std::vector<std::int32_t>& syms,
                            std::int32_t& pending_unk) const {
    if (byte_fallback_ && fallback_.append(s, syms)) return;
    if (unk_id_ < 0) return;  // HF drops the character
    if (pending_unk >= 0 && !fuse_unk_) syms.push_back(pending_unk);
    pending_unk = unk_id_;
}

void BpeModel::tokenize(std::string_view piece, std::vector<std::int32_t>& out) const {
    if (piece.empty()) return;
    if (ignore_merges_)
        if (const std::int32_t id = id_of(piece); id >= 0) return out.push_back(id);
    thread_local std::vector<std::int32_t> syms;
    syms.clear();
    std::int32_t pending_unk = -1;
    for (std::size_t i = 0; i < piece.size();) {
        const unsigned char b = static_cast<unsigned char>(piece[i]);
        std::size_t n = 1;
        std::int32_t id;
        if (byte_level_ || b < 0x80) {
            id = single_[b];
        } else {
            char32_t c;
            n = next_char(piece, i, c);
            id = id_of(piece.substr(i, n));
        }
        if (id >= 0) {
            if (pending_unk >= 0) syms.push_back(pending_unk), pending_unk = -1;
            syms.push_back(id);
        } else if (byte_level_) {
            // HF looks for <0xXX> of the byte-level character's UTF-8.
            std::string ch;
            append_utf8(char_of_byte(b), ch);
            unknown_char(ch, syms, pending_unk);
        } else {
            unknown_char(piece.substr(i, n), syms, pending_unk);
        }
        i += n;
    }
    if (pending_unk >= 0) syms.push_back(pending_unk);
    merges_.merge(syms.data(), syms.size(), out);
}

}  // namespace

std::unique_ptr<Model> make_bpe_model(const Json& j, const Where& w, bool byte_level) {
    return std::make_unique<BpeModel>(j, w, byte_level);
}

}  // namespace meshlm::hf
