// PCRE2 wrapper for tokenizer.json patterns (regex.h).
#define PCRE2_CODE_UNIT_WIDTH 8
#include "meshlm/data/hf/regex.h"

#include <pcre2.h>

#include "meshlm/core/error.h"
#include "meshlm/data/hf/utf8.h"

namespace meshlm::hf {

namespace {

// Per-thread match data and JIT stack, shared by every pattern.
struct MatchScratch {
    pcre2_match_data* data = pcre2_match_data_create(64, nullptr);
    pcre2_jit_stack* stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
    pcre2_match_context* ctx = pcre2_match_context_create(nullptr);
    MatchScratch() { pcre2_jit_stack_assign(ctx, nullptr, stack); }
    ~MatchScratch() {
        pcre2_match_context_free(ctx);
        pcre2_jit_stack_free(stack);
        pcre2_match_data_free(data);
    }
};

MatchScratch& scratch() {
    thread_local MatchScratch s;
    return s;
}

}  // namespace

Regex::Regex(const std::string& pattern, const std::string& where) : pattern_(pattern) {
    int err = 0;
    PCRE2_SIZE err_at = 0;
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                     PCRE2_UTF | PCRE2_UCP, &err, &err_at, nullptr);
    if (!code) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(err, msg, sizeof msg);
        MESHLM_INVALID(where, ": regex \"", pattern, "\" does not compile (PCRE2, at offset ",
                       err_at, "): ", reinterpret_cast<const char*>(msg));
    }
    jit_ = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
    code_ = code;
}

Regex::~Regex() {
    pcre2_code_free(static_cast<pcre2_code*>(code_));
}

void Regex::find_valid(std::string_view text,
                       std::vector<std::pair<std::size_t, std::size_t>>& out) const {
    auto* code = static_cast<pcre2_code*>(code_);
    MatchScratch& s = scratch();
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    std::size_t pos = 0, last_match_end = static_cast<std::size_t>(-1);
    while (pos <= text.size()) {
        const int rc =
            jit_ ? pcre2_jit_match(code, subject, text.size(), pos, 0, s.data, s.ctx)
                 : pcre2_match(code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK, s.data, s.ctx);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(rc, msg, sizeof msg);
            MESHLM_INVALID("regex \"", pattern_, "\" failed: ", reinterpret_cast<const char*>(msg));
        }
        const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(s.data);
        const std::size_t b = ov[0], e = ov[1];
        if (b == e && b == last_match_end) {  // empty match right after a match: skip a char
            if (b >= text.size()) break;
            char32_t c;
            pos = b + next_char(text, b, c);
            continue;
        }
        out.emplace_back(b, e);
        last_match_end = e;
        pos = e;
        if (b == e && e >= text.size()) break;
    }
}

std::vector<std::pair<std::size_t, std::size_t>> Regex::find_all(std::string_view text) const {
    std::vector<std::pair<std::size_t, std::size_t>> out;
    if (is_valid_utf8(text)) {
        find_valid(text, out);
        return out;
    }
    // Invalid bytes become U+E000 + byte; orig maps each offset of the copy back.
    std::string copy;
    std::vector<std::size_t> orig;
    copy.reserve(text.size() + 16);
    orig.reserve(text.size() + 16);
    for_each_char(text, [&](char32_t c, std::size_t at) {
        const std::size_t before = copy.size();
        append_utf8(is_invalid_byte(c) ? 0xE000 + (c & 0xFF) : c, copy);
        for (std::size_t k = before; k < copy.size(); ++k) orig.push_back(at);
    });
    orig.push_back(text.size());
    find_valid(copy, out);
    for (auto& [b, e] : out) b = orig[b], e = orig[e];
    return out;
}

std::string Regex::replace_all(std::string_view text, std::string_view with) const {
    std::string out;
    std::size_t prev = 0;
    for (const auto& [b, e] : find_all(text)) {
        out.append(text.substr(prev, b - prev));
        out.append(with);
        prev = e;
    }
    out.append(text.substr(prev));
    return out;
}

std::string regex_escape(std::string_view literal) {
    std::string out = "\\Q";
    for (std::size_t i = 0; i < literal.size(); ++i) {
        if (literal.compare(i, 2, "\\E") == 0) {
            out += "\\E\\\\E\\Q";
            ++i;
        } else {
            out.push_back(literal[i]);
        }
    }
    return out + "\\E";
}

}  // namespace meshlm::hf
