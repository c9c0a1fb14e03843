#include "meshlm/data/bpe_tokenizer.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <queue>
#include <sstream>

#include "meshlm/core/error.h"
#include "meshlm/data/pretokenize.h"
#include "meshlm/data/unicode_categories.h"

namespace meshlm {

namespace {

constexpr std::uint64_t kEmptyKey = ~std::uint64_t{0};

// GPT-2's bytes_to_unicode (HF ByteLevel bytes_char): printable bytes map to themselves, the
// other 68 to U+0100.. in increasing byte order.
struct ByteChars {
    char32_t to_char[256];
    std::int16_t to_byte[324];  // code point -> byte, -1 if not in the table
    ByteChars() {
        std::fill(std::begin(to_byte), std::end(to_byte), -1);
        int n = 0;
        for (int b = 0; b < 256; ++b) {
            const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
            to_char[b] = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + n++);
            to_byte[to_char[b]] = static_cast<std::int16_t>(b);
        }
    }
};
const ByteChars& byte_chars() {
    static const ByteChars t;
    return t;
}

// A tokenizer.json token string -> raw bytes. Characters outside the byte table keep their
// UTF-8 bytes (as HF's ByteLevel decoder does).
std::string unmap_bytelevel(std::string_view s) {
    const auto& t = byte_chars();
    std::string out;
    out.reserve(s.size());
    const auto* p = reinterpret_cast<const unsigned char*>(s.data());
    for (std::size_t i = 0; i < s.size();) {
        char32_t cp;
        const std::size_t len = unicode::decode_utf8(p + i, s.size() - i, cp);
        if (cp < 324 && t.to_byte[cp] >= 0)
            out.push_back(static_cast<char>(t.to_byte[cp]));
        else
            out.append(s.substr(i, len));
        i += len;
    }
    return out;
}

std::uint64_t mix(std::uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return k;
}

std::string printable(std::string_view s) {
    std::string out;
    for (unsigned char c : s) {
        if (c >= 0x20 && c < 0x7F) {
            out.push_back(static_cast<char>(c));
        } else {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", c);
            out += buf;
        }
    }
    return out;
}

std::string read_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) MESHLM_INVALID("cannot open tokenizer file '", path, "'");
    std::ostringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

}  // namespace

void BpeTokenizer::add_token(std::string bytes, std::int32_t id) {
    if (id < 0) MESHLM_INVALID(path_, ": negative token id ", id);
    if (id > id_limit_)
        MESHLM_INVALID(path_, ": token id ", id, " is out of range: the file declares ",
                       id_limit_ - kIdGap, " tokens, and ids may exceed that count by at most ",
                       kIdGap);
    if (static_cast<std::size_t>(id) >= id_bytes_.size()) {
        id_bytes_.resize(id + 1);
        id_skip_.resize(id + 1, 0);
    }
    id_bytes_[id] = bytes;
    token_ids_[std::move(bytes)] = id;
}

void BpeTokenizer::add_merge(std::int32_t left, std::int32_t right, std::int32_t rank,
                             std::int32_t merged) {
    pending_.push_back(
        {(std::uint64_t(std::uint32_t(left)) << 32) | std::uint32_t(right), {rank, merged}});
}

void BpeTokenizer::finish(const std::string& path) {
    std::size_t cap = 16;
    while (cap < 2 * pending_.size()) cap *= 2;
    merges_.assign(cap, Merge{kEmptyKey, 0, 0});
    for (const auto& [key, rm] : pending_) {
        std::size_t i = mix(key) & (cap - 1);
        while (merges_[i].key != kEmptyKey && merges_[i].key != key) i = (i + 1) & (cap - 1);
        merges_[i] = Merge{key, rm.first, rm.second};  // a repeated pair: the later one wins
    }
    pending_.clear();
    pending_.shrink_to_fit();
    for (int b = 0; b < 256; ++b) {
        auto it = token_ids_.find(std::string(1, static_cast<char>(b)));
        byte_ids_[b] = it == token_ids_.end() ? -1 : it->second;
    }
    vocab_size_ = std::max<int>(vocab_size_, static_cast<int>(id_bytes_.size()));
    if (eot_id_ < 0)
        MESHLM_INVALID(path,
                       ": no end-of-text token (one of <|endoftext|>, </s>, "
                       "<|end_of_text|>, <eos> among the added tokens)");
}

const BpeTokenizer::Merge* BpeTokenizer::find_merge(std::int32_t left, std::int32_t right) const {
    const std::uint64_t key = (std::uint64_t(std::uint32_t(left)) << 32) | std::uint32_t(right);
    const std::size_t mask = merges_.size() - 1;
    for (std::size_t i = mix(key) & mask;; i = (i + 1) & mask) {
        const Merge& m = merges_[i];
        if (m.key == key) return &m;
        if (m.key == kEmptyKey) return nullptr;
    }
}

std::unique_ptr<BpeTokenizer> BpeTokenizer::from_hf_json(const std::string& path) {
    using nlohmann::json;
    std::unique_ptr<BpeTokenizer> t(new BpeTokenizer);
    t->path_ = path;
    t->name_ = path;
    json j;
    try {
        j = json::parse(read_file(path));
    } catch (const json::exception& e) {
        MESHLM_INVALID(path, ": not valid JSON: ", e.what());
    }
    try {
        if (!j.contains("model") || !j["model"].is_object())
            MESHLM_INVALID(path, ": no \"model\" object; not a tokenizer.json");
        const json& m = j["model"];
        const std::string type = m.value("type", "");
        if (type != "BPE")
            MESHLM_INVALID(path, ": model.type is '", type, "'; only \"BPE\" is supported");
        if (m.contains("dropout") && !m["dropout"].is_null())
            MESHLM_INVALID(path, ": BPE dropout is not supported");
        for (const char* k : {"continuing_subword_prefix", "end_of_word_suffix"})
            if (m.contains(k) && m[k].is_string() && !m[k].get<std::string>().empty())
                MESHLM_INVALID(path, ": model.", k, " is not supported (byte-level BPE only)");
        if (m.value("byte_fallback", false))
            MESHLM_INVALID(path, ": byte_fallback is not supported");
        t->whole_piece_lookup_ = m.value("ignore_merges", false);
        if (j.contains("normalizer") && !j["normalizer"].is_null())
            MESHLM_INVALID(path, ": normalizers are not supported (normalizer must be null)");

        if (!m.contains("vocab") || !m["vocab"].is_object())
            MESHLM_INVALID(path, ": model.vocab is missing");
        const json added = j.value("added_tokens", json::array());
        t->id_limit_ = static_cast<std::int64_t>(m["vocab"].size() + added.size()) + kIdGap;
        for (const auto& [tok, id] : m["vocab"].items())
            t->add_token(unmap_bytelevel(tok), id.get<std::int32_t>());

        // Pre-tokenizer.
        const json pt = j.value("pre_tokenizer", json());
        auto bytelevel = [&](const json& b, bool in_sequence) {
            const bool use_regex = b.value("use_regex", true);
            if (in_sequence && use_regex)
                MESHLM_INVALID(path,
                               ": Sequence[Split, ByteLevel] needs ByteLevel use_regex=false");
            if (!in_sequence && !use_regex)
                MESHLM_INVALID(path, ": ByteLevel with use_regex=false alone is not supported");
            t->add_prefix_space_ = b.value("add_prefix_space", false);
            if (in_sequence && t->add_prefix_space_)
                MESHLM_INVALID(path, ": add_prefix_space inside a Sequence is not supported");
        };
        const std::string pt_type = pt.is_object() ? pt.value("type", "") : "";
        if (pt_type == "ByteLevel") {
            bytelevel(pt, false);
        } else if (pt_type == "Sequence" && pt.contains("pretokenizers") &&
                   pt["pretokenizers"].size() == 2 &&
                   pt["pretokenizers"][0].value("type", "") == "Split" &&
                   pt["pretokenizers"][1].value("type", "") == "ByteLevel") {
            const json& s = pt["pretokenizers"][0];
            const json pat = s.value("pattern", json());
            const std::string re = pat.is_object() ? pat.value("Regex", "") : "";
            if (re != kGpt2Pattern)
                MESHLM_INVALID(path, ": Split pattern ", pat.dump(),
                               " is not supported; only the GPT-2 pattern is");
            if (s.value("behavior", "") != "Isolated" || s.value("invert", false))
                MESHLM_INVALID(path, ": Split must have behavior Isolated and invert false");
            bytelevel(pt["pretokenizers"][1], true);
        } else {
            MESHLM_INVALID(path, ": pre_tokenizer ", pt.dump(),
                           " is not supported; use ByteLevel or Sequence[Split(GPT-2 pattern), "
                           "ByteLevel(use_regex=false)]");
        }

        // Merges: "a b" strings or ["a", "b"] pairs; rank = index.
        if (!m.contains("merges") || !m["merges"].is_array())
            MESHLM_INVALID(path, ": model.merges is missing");
        std::int32_t rank = 0;
        for (const auto& e : m["merges"]) {
            std::string a, b;
            if (e.is_string()) {
                const std::string s = e.get<std::string>();
                if (s.rfind("#version", 0) == 0) continue;
                const auto sp = s.find(' ');
                if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos)
                    MESHLM_INVALID(path, ": bad merge #", rank, " \"", s,
                                   "\": expected two tokens separated by one space");
                a = s.substr(0, sp);
                b = s.substr(sp + 1);
            } else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {
                a = e[0].get<std::string>();
                b = e[1].get<std::string>();
            } else {
                MESHLM_INVALID(path, ": bad merge #", rank, " ", e.dump(),
                               ": expected \"a b\" or [\"a\", \"b\"]");
            }
            auto id_of = [&](const std::string& tok) {
                auto it = t->token_ids_.find(unmap_bytelevel(tok));
                if (it == t->token_ids_.end())
                    MESHLM_INVALID(path, ": merge #", rank, " (\"", a, "\", \"", b, "\"): token \"",
                                   tok, "\" is not in the vocab");
                return it->second;
            };
            const std::int32_t left = id_of(a), right = id_of(b);
            t->add_merge(left, right, rank, id_of(a + b));
            ++rank;
        }

        // Added tokens: matched on the raw text before pre-tokenization.
        for (const auto& a : j.value("added_tokens", json::array())) {
            Special s{a.at("content").get<std::string>(), a.at("id").get<std::int32_t>(),
                      a.value("special", false), a.value("lstrip", false),
                      a.value("rstrip", false)};
            if (a.value("single_word", false))
                MESHLM_INVALID(path, ": added token \"", s.text,
                               "\": single_word is not supported");
            if (s.text.empty()) MESHLM_INVALID(path, ": empty added token");
            t->add_token(s.text, s.id);
            t->id_skip_[s.id] = s.special ? 1 : 0;
            t->specials_.push_back(std::move(s));
        }
    } catch (const nlohmann::json::exception& e) {
        MESHLM_INVALID(path, ": malformed tokenizer.json: ", e.what());
    }
    for (const char* eot : {"<|endoftext|>", "</s>", "<|end_of_text|>", "<eos>"}) {
        for (const auto& s : t->specials_)
            if (s.text == eot && t->eot_id_ < 0) t->eot_id_ = s.id;
    }
    t->specials_in_encode_ = true;
    t->finish(path);
    return t;
}

std::unique_ptr<BpeTokenizer> BpeTokenizer::from_tiktoken(const std::string& path) {
    std::unique_ptr<BpeTokenizer> t(new BpeTokenizer);
    t->path_ = path;
    t->name_ = path;
    const std::string data = read_file(path);
    static const auto b64 = [] {
        std::array<std::int8_t, 256> v{};
        v.fill(-1);
        const char* a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        for (int i = 0; i < 64; ++i) v[static_cast<unsigned char>(a[i])] = static_cast<int8_t>(i);
        return v;
    }();
    t->id_limit_ =
        static_cast<std::int64_t>(std::count(data.begin(), data.end(), '\n')) + 1 + kIdGap;
    std::size_t pos = 0;
    int line_no = 0;
    while (pos < data.size()) {
        std::size_t eol = data.find('\n', pos);
        if (eol == std::string::npos) eol = data.size();
        std::string_view line(data.data() + pos, eol - pos);
        pos = eol + 1;
        ++line_no;
        while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
        if (line.empty()) continue;
        const auto sp = line.find(' ');
        if (sp == std::string_view::npos)
            MESHLM_INVALID(path, ":", line_no, ": expected \"base64-token rank\"");
        std::string bytes;
        std::uint32_t acc = 0;
        int bits = 0;
        for (char c : line.substr(0, sp)) {
            if (c == '=') break;
            const int v = b64[static_cast<unsigned char>(c)];
            if (v < 0) MESHLM_INVALID(path, ":", line_no, ": invalid base64");
            acc = (acc << 6) | static_cast<std::uint32_t>(v);
            bits += 6;
            if (bits >= 8) {
                bits -= 8;
                bytes.push_back(static_cast<char>((acc >> bits) & 0xFF));
            }
        }
        std::int32_t rank = 0;
        const std::string_view r = line.substr(sp + 1);
        if (r.empty() || r.size() > 9 ||
            !std::all_of(r.begin(), r.end(), [](char c) { return c >= '0' && c <= '9'; }))
            MESHLM_INVALID(path, ":", line_no, ": bad rank '", r, "'");
        for (char c : r) rank = rank * 10 + (c - '0');
        if (bytes.empty()) MESHLM_INVALID(path, ":", line_no, ": empty token");
        t->add_token(std::move(bytes), rank);
    }
    if (t->token_ids_.empty()) MESHLM_INVALID(path, ": no tokens in the rank file");
    // Every split of a token into two tokens is a merge whose rank is the token's rank.
    for (std::size_t id = 0; id < t->id_bytes_.size(); ++id) {
        const std::string& s = t->id_bytes_[id];
        for (std::size_t k = 1; k < s.size(); ++k) {
            auto l = t->token_ids_.find(std::string_view(s).substr(0, k));
            if (l == t->token_ids_.end()) continue;
            auto r = t->token_ids_.find(std::string_view(s).substr(k));
            if (r == t->token_ids_.end()) continue;
            t->add_merge(l->second, r->second, static_cast<std::int32_t>(id),
                         static_cast<std::int32_t>(id));
        }
    }
    const std::int32_t eot = 50256;
    if (eot < static_cast<std::int32_t>(t->id_bytes_.size()) && !t->id_bytes_[eot].empty())
        MESHLM_INVALID(path, ": rank 50256 is taken, but GPT-2's <|endoftext|> needs it");
    t->add_token("<|endoftext|>", eot);
    t->id_skip_[eot] = 1;
    t->specials_.push_back(Special{"<|endoftext|>", eot, true, false, false});
    t->eot_id_ = eot;
    t->vocab_size_ = 50257;
    t->whole_piece_lookup_ = true;
    t->specials_in_encode_ = false;
    t->finish(path);
    return t;
}

std::optional<std::int32_t> BpeTokenizer::token_id(std::string_view bytes) const {
    auto it = token_ids_.find(bytes);
    if (it == token_ids_.end()) return std::nullopt;
    return it->second;
}

void BpeTokenizer::encode_piece(std::string_view piece, std::vector<std::int32_t>& out) const {
    const auto* p = reinterpret_cast<const unsigned char*>(piece.data());
    const std::size_t n = piece.size();
    auto byte_id = [&](std::size_t i) {
        const std::int32_t id = byte_ids_[p[i]];
        if (id < 0)
            MESHLM_INVALID(path_, ": the vocabulary has no token for byte 0x",
                           printable(piece.substr(i, 1)));
        return id;
    };
    if (n == 1) {
        out.push_back(byte_id(0));
        return;
    }
    if (whole_piece_lookup_) {
        auto it = token_ids_.find(piece);
        if (it != token_ids_.end()) {
            out.push_back(it->second);
            return;
        }
    }
    constexpr std::int32_t kNone = INT32_MAX;
    if (n <= 128) {
        // Short pieces: arrays of part ids and pair ranks, linear scan for the lowest rank.
        std::int32_t ids[128], ranks[128], merged[128];
        std::size_t m = n;
        for (std::size_t i = 0; i < n; ++i) ids[i] = byte_id(i);
        auto set_pair = [&](std::size_t i) {
            const Merge* mg = find_merge(ids[i], ids[i + 1]);
            ranks[i] = mg ? mg->rank : kNone;
            merged[i] = mg ? mg->merged : -1;
        };
        for (std::size_t i = 0; i + 1 < m; ++i) set_pair(i);
        while (m > 1) {
            std::size_t best = 0;
            std::int32_t best_rank = ranks[0];
            for (std::size_t i = 1; i + 1 < m; ++i)
                if (ranks[i] < best_rank) best_rank = ranks[i], best = i;
            if (best_rank == kNone) break;
            ids[best] = merged[best];
            for (std::size_t i = best + 1; i + 1 < m; ++i) ids[i] = ids[i + 1];
            for (std::size_t i = best + 1; i + 2 < m; ++i)
                ranks[i] = ranks[i + 1], merged[i] = merged[i + 1];
            --m;
            if (best + 1 < m) set_pair(best);
            if (best > 0) set_pair(best - 1);
        }
        out.insert(out.end(), ids, ids + m);
        return;
    }
    // Long pieces: doubly linked parts and a heap of (rank, position); stale entries are
    // recognised by their ids no longer being adjacent.
    struct Cand {
        std::int32_t rank;
        std::uint32_t pos;
        std::int32_t left, right, merged;
        bool operator>(const Cand& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
    };
    std::vector<std::int32_t> ids(n), prev(n), next(n);
    for (std::size_t i = 0; i < n; ++i) {
        ids[i] = byte_id(i);
        prev[i] = static_cast<std::int32_t>(i) - 1;
        next[i] = i + 1 < n ? static_cast<std::int32_t>(i + 1) : -1;
    }
    std::priority_queue<Cand, std::vector<Cand>, std::greater<Cand>> heap;
    auto push = [&](std::int32_t i) {
        if (i < 0 || next[i] < 0) return;
        if (const Merge* mg = find_merge(ids[i], ids[next[i]]))
            heap.push(
                Cand{mg->rank, static_cast<std::uint32_t>(i), ids[i], ids[next[i]], mg->merged});
    };
    for (std::size_t i = 0; i + 1 < n; ++i) push(static_cast<std::int32_t>(i));
    while (!heap.empty()) {
        const Cand c = heap.top();
        heap.pop();
        const std::int32_t i = static_cast<std::int32_t>(c.pos);
        const std::int32_t j = next[i];
        if (ids[i] != c.left || j < 0 || ids[j] != c.right) continue;  // stale
        ids[i] = c.merged;
        ids[j] = -1;
        next[i] = next[j];
        if (next[j] >= 0) prev[next[j]] = i;
        push(prev[i]);
        push(i);
    }
    for (std::int32_t i = 0; i >= 0; i = next[i]) out.push_back(ids[i]);
}

void BpeTokenizer::encode_ordinary_into(std::string_view text,
                                        std::vector<std::int32_t>& out) const {
    if (text.empty()) return;
    std::string prefixed;
    if (add_prefix_space_ && text.front() != ' ') {
        prefixed.reserve(text.size() + 1);
        prefixed.push_back(' ');
        prefixed.append(text);
        text = prefixed;
    }
    gpt2_pretokenize(text, [&](std::string_view piece) { encode_piece(piece, out); });
}

void BpeTokenizer::encode_impl(std::string_view text, bool specials,
                               std::vector<std::int32_t>& out) const {
    out.reserve(out.size() + text.size() / 3);
    if (!specials || specials_.empty()) {
        encode_ordinary_into(text, out);
        return;
    }
    // Leftmost-longest match of the added tokens; lstrip / rstrip absorb adjacent whitespace.
    auto is_space_at = [&](std::size_t i, std::size_t& len) {
        char32_t cp;
        len = unicode::decode_utf8(reinterpret_cast<const unsigned char*>(text.data()) + i,
                                   text.size() - i, cp);
        return unicode::classify(cp) == unicode::CharClass::Space;
    };
    std::size_t seg = 0, i = 0;
    while (i < text.size()) {
        const Special* best = nullptr;
        for (const auto& s : specials_)
            if (text.compare(i, s.text.size(), s.text) == 0 &&
                (!best || s.text.size() > best->text.size()))
                best = &s;
        if (!best) {
            ++i;
            continue;
        }
        std::size_t start = i, end = i + best->text.size();
        if (best->lstrip) {
            while (start > seg) {
                std::size_t b = start - 1;
                while (b > seg && (static_cast<unsigned char>(text[b]) & 0xC0) == 0x80) --b;
                std::size_t len;
                if (!is_space_at(b, len) || b + len != start) break;
                start = b;
            }
        }
        if (best->rstrip) {
            std::size_t len;
            while (end < text.size() && is_space_at(end, len)) end += len;
        }
        encode_ordinary_into(text.substr(seg, start - seg), out);
        out.push_back(best->id);
        seg = i = end;
    }
    encode_ordinary_into(text.substr(seg), out);
}

std::vector<std::int32_t> BpeTokenizer::encode(std::string_view text) const {
    std::vector<std::int32_t> out;
    encode_impl(text, specials_in_encode_, out);
    return out;
}

std::vector<std::int32_t> BpeTokenizer::encode_ordinary(std::string_view text) const {
    std::vector<std::int32_t> out;
    encode_impl(text, false, out);
    return out;
}

std::vector<std::int32_t> BpeTokenizer::encode_with_special(std::string_view text) const {
    std::vector<std::int32_t> out;
    encode_impl(text, true, out);
    return out;
}

std::string BpeTokenizer::decode(const std::vector<std::int32_t>& ids) const {
    std::string s;
    for (auto id : ids)
        if (id >= 0 && static_cast<std::size_t>(id) < id_bytes_.size() && !id_skip_[id])
            s += id_bytes_[id];
    return s;
}

}  // namespace meshlm
