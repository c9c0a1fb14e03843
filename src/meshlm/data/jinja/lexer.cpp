#include "meshlm/data/jinja/lexer.h"

#include <cctype>
#include <cstdint>

#include "meshlm/data/jinja/value.h"

namespace meshlm::jinja {

std::string where(const std::string& source, std::size_t pos) {
    int line = 1, col = 1;
    for (std::size_t i = 0; i < pos && i < source.size(); ++i) {
        if (source[i] == '\n') {
            ++line;
            col = 1;
        } else if ((static_cast<unsigned char>(source[i]) & 0xC0) != 0x80) {
            ++col;
        }
    }
    return "line " + std::to_string(line) + ", column " + std::to_string(col);
}

namespace {

bool is_ws(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

[[noreturn]] void fail(const std::string& src, std::size_t pos, const std::string& what) {
    throw TemplateError("chat template: " + what + " at " + where(src, pos));
}

void append_utf8(std::string& out, std::uint32_t cp) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

// A quoted string literal from src[i] (the quote); returns the offset after it. Python's
// escapes; an unknown one keeps its backslash, as Python does.
std::size_t lex_string(const std::string& src, std::size_t i, std::string& out) {
    const char q = src[i++];
    for (; i < src.size() && src[i] != q; ++i) {
        if (src[i] != '\\' || i + 1 >= src.size()) {
            out += src[i];
            continue;
        }
        const char e = src[++i];
        const int hex = e == 'x' ? 2 : e == 'u' ? 4 : e == 'U' ? 8 : 0;
        switch (e) {
            case 'n':
                out += '\n';
                break;
            case 't':
                out += '\t';
                break;
            case 'r':
                out += '\r';
                break;
            case 'b':
                out += '\b';
                break;
            case 'f':
                out += '\f';
                break;
            case 'v':
                out += '\v';
                break;
            case '0':
                out += '\0';
                break;
            case '\\':
            case '\'':
            case '"':
                out += e;
                break;
            case '\n':
                break;  // a line continuation
            default:
                if (hex && i + hex < src.size()) {
                    append_utf8(out, static_cast<std::uint32_t>(
                                         std::stoul(src.substr(i + 1, hex), nullptr, 16)));
                    i += hex;
                } else {
                    out += '\\';
                    out += e;
                }
        }
    }
    if (i >= src.size()) fail(src, i, "unterminated string");
    return i + 1;
}

// The tokens inside {{ ... }} or {% ... %} from src[i]; returns the offset after the closing
// marker and sets strip / keep from its '-' / '+'.
std::size_t lex_tag(const std::string& src, std::size_t i, bool stmt, std::vector<Token>& out,
                    bool& strip, bool& keep) {
    static const char* const kOps2[] = {"**", "//", "==", "!=", "<=", ">="};
    int depth = 0;
    const std::size_t open = i;
    while (true) {
        while (i < src.size() && is_ws(src[i])) ++i;
        if (i >= src.size()) fail(src, open, stmt ? "unclosed '{%'" : "unclosed '{{'");
        const std::string_view rest(src.data() + i, src.size() - i);
        const std::string_view close = stmt ? "%}" : "}}";
        if (depth == 0) {
            for (char m : {'-', '+', '\0'}) {
                if (m == '+' && !stmt) continue;
                const std::size_t k = m ? 1 : 0;
                if ((m == 0 || rest[0] == m) && rest.substr(k, 2) == close) {
                    out.push_back({Tok::end, "", i});
                    strip = m == '-';
                    keep = m == '+';
                    return i + k + 2;
                }
            }
        }
        const char c = src[i];
        Token t{Tok::op, "", i};
        if (c == '\'' || c == '"') {
            t.type = Tok::string;
            i = lex_string(src, i, t.s);
        } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
            t.type = Tok::name;
            while (i < src.size() &&
                   (std::isalnum(static_cast<unsigned char>(src[i])) || src[i] == '_'))
                t.s += src[i++];
        } else if (std::isdigit(static_cast<unsigned char>(c))) {
            t.type = Tok::integer;
            while (i < src.size() &&
                   (std::isdigit(static_cast<unsigned char>(src[i])) || src[i] == '_'))
                if (src[i++] != '_') t.s += src[i - 1];
            if (i + 1 < src.size() && src[i] == '.' &&
                std::isdigit(static_cast<unsigned char>(src[i + 1]))) {
                t.type = Tok::floating;
                t.s += src[i++];
                while (i < src.size() && std::isdigit(static_cast<unsigned char>(src[i])))
                    t.s += src[i++];
            }
            if (i < src.size() && (src[i] == 'e' || src[i] == 'E')) {
                t.type = Tok::floating;
                t.s += src[i++];
                if (i < src.size() && (src[i] == '+' || src[i] == '-')) t.s += src[i++];
                while (i < src.size() && std::isdigit(static_cast<unsigned char>(src[i])))
                    t.s += src[i++];
            }
        } else {
            for (const char* op : kOps2)
                if (rest.substr(0, 2) == op) t.s = op;
            if (t.s.empty()) {
                if (std::string_view("+-*/%~<>()[]{},.:|=").find(c) == std::string_view::npos)
                    fail(src, i, std::string("unexpected character '") + c + "'");
                t.s = std::string(1, c);
                depth += (c == '(' || c == '[' || c == '{') - (c == ')' || c == ']' || c == '}');
            }
            i += t.s.size();
        }
        out.push_back(std::move(t));
    }
}

std::string normalize(const std::string& in) {
    std::string s;
    s.reserve(in.size());
    for (std::size_t i = 0; i < in.size(); ++i) {
        if (in[i] == '\r') {
            s += '\n';
            if (i + 1 < in.size() && in[i + 1] == '\n') ++i;
        } else {
            s += in[i];
        }
    }
    if (!s.empty() && s.back() == '\n') s.pop_back();
    return s;
}

// lstrip_blocks: the spaces and tabs between the start of a line and a block or comment tag go.
void lstrip_line(std::string& text, bool line_starting) {
    const std::size_t nl = text.rfind('\n');
    const std::size_t from = nl == std::string::npos ? 0 : nl + 1;
    if (nl == std::string::npos && !line_starting) return;
    for (std::size_t k = from; k < text.size(); ++k)
        if (!is_ws(text[k])) return;
    text.resize(from);
}

}  // namespace

Lexed lex(const std::string& source) {
    Lexed r;
    r.source = normalize(source);
    const std::string& src = r.source;
    std::size_t pos = 0;
    bool line_starting = true;
    while (pos < src.size()) {
        std::size_t start = pos;
        while ((start = src.find('{', start)) != std::string::npos && start + 1 < src.size() &&
               src[start + 1] != '{' && src[start + 1] != '%' && src[start + 1] != '#')
            ++start;
        if (start == std::string::npos || start + 1 >= src.size()) {
            r.tokens.push_back({Tok::text, src.substr(pos), pos});
            break;
        }
        const char kind = src[start + 1];
        const char mark = start + 2 < src.size() ? src[start + 2] : 0;
        std::string text = src.substr(pos, start - pos);
        if (mark == '-') {
            text.erase(text.find_last_not_of(" \t\n\r\f\v") + 1);
        } else if (mark != '+' && kind != '{') {
            lstrip_line(text, line_starting);
        }
        if (!text.empty()) r.tokens.push_back({Tok::text, text, pos});
        std::size_t i = start + 2 + (mark == '-' || mark == '+');
        bool strip = false, keep = false;
        if (kind == '#') {
            const std::size_t end = src.find("#}", i);
            if (end == std::string::npos) fail(src, start, "unclosed comment '{#'");
            strip = end > i && src[end - 1] == '-';
            keep = end > i && src[end - 1] == '+';
            i = end + 2;
        } else {
            r.tokens.push_back({kind == '%' ? Tok::stmt_begin : Tok::expr_begin, "", start});
            i = lex_tag(src, i, kind == '%', r.tokens, strip, keep);
        }
        if (strip) {
            while (i < src.size() && is_ws(src[i])) ++i;
        } else if (kind != '{' && !keep && i < src.size() && src[i] == '\n') {
            ++i;  // trim_blocks
        }
        line_starting = i > 0 && src[i - 1] == '\n';
        pos = i;
    }
    return r;
}

}  // namespace meshlm::jinja
