// The tokenizer.json Unigram model as HF tokenizers 0.23 runs it (models/unigram/model.rs,
// encode_optimized, after SentencePiece): Viterbi over the pieces that start at each character
// (found through a byte trie), a character no piece covers costs min_score - 10 as the unknown
// token; consecutive unknowns are fused; an unknown string becomes its <0xXX> byte tokens when
// byte_fallback is on and they all exist, else the unk id (none is an error, as in HF).
#include <limits>
#include <unordered_map>

#include "meshlm/data/hf/model.h"
#include "meshlm/data/hf/utf8.h"

namespace meshlm::hf {

namespace {

class UnigramModel : public Model {
  public:
    UnigramModel(const Json& j, const Where& w);
    void tokenize(std::string_view piece, std::vector<std::int32_t>& out) const override;
    std::vector<std::pair<std::string, std::int32_t>> vocab() const override;

  private:
    std::int32_t child(std::int32_t node, unsigned char b) const {
        auto it = edges_.find((static_cast<std::uint64_t>(node) << 8) | b);
        return it == edges_.end() ? -1 : it->second;
    }
    void emit(std::string_view s, std::vector<std::int32_t>& out) const;

    std::vector<std::string> pieces_;
    std::vector<double> scores_;
    StringIdMap ids_;
    std::unordered_map<std::uint64_t, std::int32_t> edges_;  // (node << 8 | byte) -> node
    std::vector<std::int32_t> node_piece_;                   // node -> piece id or -1
    std::int32_t unk_id_ = -1;
    double unk_score_ = 0;
    bool byte_fallback_;
    ByteFallbackIds fallback_{[](std::string_view) { return -1; }};
};

UnigramModel::UnigramModel(const Json& j, const Where& w) {
    byte_fallback_ = json_bool(j, "byte_fallback", false, w);
    const Where wv = w.at("vocab");
    if (!j.contains("vocab") || !j["vocab"].is_array()) wv.fail("expected [[piece, score], ...]");
    double min_score = std::numeric_limits<double>::infinity();
    node_piece_.push_back(-1);
    for (std::size_t i = 0; i < j["vocab"].size(); ++i) {
        const Json& e = j["vocab"][i];
        if (!e.is_array() || e.size() != 2 || !e[0].is_string() || !e[1].is_number())
            wv.at(i).fail("expected [piece, score], got ", e.dump());
        pieces_.push_back(e[0].get<std::string>());
        scores_.push_back(e[1].get<double>());
        min_score = std::min(min_score, scores_.back());
        ids_.emplace(pieces_.back(), static_cast<std::int32_t>(i));
        std::int32_t node = 0;
        for (unsigned char b : pieces_.back()) {
            std::int32_t c = child(node, b);
            if (c < 0) {
                c = static_cast<std::int32_t>(node_piece_.size());
                node_piece_.push_back(-1);
                edges_[(static_cast<std::uint64_t>(node) << 8) | b] = c;
            }
            node = c;
        }
        if (node_piece_[node] < 0) node_piece_[node] = static_cast<std::int32_t>(i);
    }
    unk_id_ = static_cast<std::int32_t>(json_int(j, "unk_id", -1, w));
    if (unk_id_ >= static_cast<std::int32_t>(pieces_.size()))
        w.at("unk_id").fail(unk_id_, " is outside the vocabulary");
    unk_score_ = min_score - 10.0;
    fallback_ = ByteFallbackIds([&](std::string_view name) {
        auto it = ids_.find(name);
        return it == ids_.end() ? -1 : it->second;
    });
}

std::vector<std::pair<std::string, std::int32_t>> UnigramModel::vocab() const {
    std::vector<std::pair<std::string, std::int32_t>> v;
    for (std::size_t i = 0; i < pieces_.size(); ++i)
        v.emplace_back(pieces_[i], static_cast<std::int32_t>(i));
    return v;
}

void UnigramModel::emit(std::string_view s, std::vector<std::int32_t>& out) const {
    if (auto it = ids_.find(s); it != ids_.end()) return out.push_back(it->second);
    if (byte_fallback_ && fallback_.append(s, out)) return;
    if (unk_id_ < 0)
        MESHLM_INVALID("Unigram model: \"", s,
                       "\" is not in the vocabulary and there is no unk_id");
    out.push_back(unk_id_);
}

void UnigramModel::tokenize(std::string_view s, std::vector<std::int32_t>& out) const {
    struct Node {
        std::int32_t id = -1;
        double score = 0;
        std::int64_t start = -1;
    };
    std::vector<Node> best(s.size() + 1);
    for (std::size_t pos = 0; pos < s.size();) {
        const double here = best[pos].score;
        char32_t c;
        const std::size_t mblen = next_char(s, pos, c);
        bool single = false;
        std::int32_t node = 0;
        for (std::size_t k = pos; k < s.size(); ++k) {
            node = child(node, static_cast<unsigned char>(s[k]));
            if (node < 0) break;
            const std::int32_t id = node_piece_[node];
            if (id < 0) continue;
            Node& t = best[k + 1];
            const double cand = here + scores_[id];
            if (t.start < 0 || cand > t.score) t = {id, cand, static_cast<std::int64_t>(pos)};
            single = single || k + 1 - pos == mblen;
        }
        if (!single) {
            Node& t = best[pos + mblen];
            const double cand = here + unk_score_;
            if (t.start < 0 || cand > t.score) t = {unk_id_, cand, static_cast<std::int64_t>(pos)};
        }
        pos += mblen;
    }
    // Back-track; consecutive unknowns fuse into one string.
    struct Span {
        std::size_t b, e;
        bool unk;
    };
    std::vector<Span> spans;
    for (std::size_t end = s.size(); end > 0;) {
        const Node& n = best[end];
        const auto start = static_cast<std::size_t>(n.start);
        const bool unk = unk_id_ >= 0 && n.id == unk_id_;
        if (unk && !spans.empty() && spans.back().unk)
            spans.back().b = start;
        else
            spans.push_back({start, end, unk});
        end = start;
    }
    for (auto it = spans.rbegin(); it != spans.rend(); ++it)
        emit(s.substr(it->b, it->e - it->b), out);
}

}  // namespace

std::unique_ptr<Model> make_unigram_model(const Json& j, const Where& w) {
    return std::make_unique<UnigramModel>(j, w);
}

}  // namespace meshlm::hf
