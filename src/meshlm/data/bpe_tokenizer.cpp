#include "meshlm/data/bpe_tokenizer.h"

#include <algorithm>
#include <array>
#include <cstdio>

#include "meshlm/core/error.h"
#include "meshlm/data/pretokenize.h"
#include "meshlm/data/unicode_categories.h"

namespace meshlm {

namespace {

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

void BpeTokenizer::finish(const std::string& path) {
    merges_.finish();
    for (int b = 0; b < 256; ++b) {
        auto it = token_ids_.find(std::string(1, static_cast<char>(b)));
        byte_ids_[b] = it == token_ids_.end() ? -1 : it->second;
    }
    vocab_size_ = std::max<int>(vocab_size_, static_cast<int>(id_bytes_.size()));
    if (eot_id_ < 0) MESHLM_INVALID(path, ": no end-of-text token");
}

std::unique_ptr<BpeTokenizer> BpeTokenizer::from_tiktoken(const std::string& path) {
    std::unique_ptr<BpeTokenizer> t(new BpeTokenizer);
    t->path_ = path;
    t->name_ = path;
    const std::string data = read_tokenizer_file(path);
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
            t->merges_.add(l->second, r->second, static_cast<std::int32_t>(id),
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
    if (n <= 128) {
        std::int32_t ids[128];
        for (std::size_t i = 0; i < n; ++i) ids[i] = byte_id(i);
        merges_.merge(ids, n, out);
        return;
    }
    std::vector<std::int32_t> ids(n);
    for (std::size_t i = 0; i < n; ++i) ids[i] = byte_id(i);
    merges_.merge(ids.data(), n, out);
}

void BpeTokenizer::encode_ordinary_into(std::string_view text,
                                        std::vector<std::int32_t>& out) const {
    if (text.empty()) return;
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
