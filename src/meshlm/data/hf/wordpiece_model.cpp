// The tokenizer.json WordPiece model as HF tokenizers 0.23 runs it (models/wordpiece/mod.rs):
// greedy longest-match-first; pieces after the first carry continuing_subword_prefix ("##"); a
// word with a part no token matches, or longer than max_input_chars_per_word characters, is the
// unknown token.
#include "meshlm/data/hf/model.h"
#include "meshlm/data/hf/utf8.h"

namespace meshlm::hf {

namespace {

class WordPieceModel : public Model {
  public:
    WordPieceModel(const Json& j, const Where& w);
    void tokenize(std::string_view piece, std::vector<std::int32_t>& out) const override;
    std::vector<std::pair<std::string, std::int32_t>> vocab() const override { return entries_; }

  private:
    std::vector<std::pair<std::string, std::int32_t>> entries_;
    StringIdMap ids_;
    std::string prefix_;
    std::size_t max_chars_;
    std::int32_t unk_id_ = -1;
};

WordPieceModel::WordPieceModel(const Json& j, const Where& w) {
    if (!j.contains("vocab") || !j["vocab"].is_object()) w.at("vocab").fail("expected an object");
    for (const auto& [tok, id] : j["vocab"].items()) {
        if (!id.is_number_integer() || id.get<long long>() < 0)
            w.at("vocab").fail("token \"", tok, "\" has no valid id");
        entries_.emplace_back(tok, id.get<std::int32_t>());
        ids_[tok] = id.get<std::int32_t>();
    }
    prefix_ = json_string(j, "continuing_subword_prefix", "##", w);
    max_chars_ = static_cast<std::size_t>(json_int(j, "max_input_chars_per_word", 100, w));
    const std::string unk = json_string(j, "unk_token", "[UNK]", w);
    auto it = ids_.find(unk);
    if (it == ids_.end()) w.at("unk_token").fail("\"", unk, "\" is not in the vocabulary");
    unk_id_ = it->second;
}

void WordPieceModel::tokenize(std::string_view s, std::vector<std::int32_t>& out) const {
    std::vector<std::size_t> bounds;  // character starts, then s.size()
    for_each_char(s, [&](char32_t, std::size_t at) { bounds.push_back(at); });
    if (bounds.size() > max_chars_) return out.push_back(unk_id_);
    bounds.push_back(s.size());
    const std::size_t first = out.size();
    std::string key;
    for (std::size_t start = 0; start + 1 < bounds.size();) {
        std::size_t end = bounds.size() - 1;
        std::int32_t found = -1;
        for (; end > start; --end) {
            key.assign(start > 0 ? prefix_ : std::string());
            key.append(s.substr(bounds[start], bounds[end] - bounds[start]));
            if (auto it = ids_.find(key); it != ids_.end()) {
                found = it->second;
                break;
            }
        }
        if (found < 0) {
            out.resize(first);
            return out.push_back(unk_id_);
        }
        out.push_back(found);
        start = end;
    }
}

}  // namespace

std::unique_ptr<Model> make_wordpiece_model(const Json& j, const Where& w) {
    return std::make_unique<WordPieceModel>(j, w);
}

}  // namespace meshlm::hf
