#include "meshlm/data/jinja/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace meshlm::jinja {

Value Value::undefined(std::string what) {
    Value v;
    v.kind = Kind::undefined;
    v.name = std::move(what);
    return v;
}

Value Value::function(std::string fn) {
    Value v;
    v.kind = Kind::function;
    v.data = std::move(fn);
    return v;
}

Value Value::name_space(Json dict) {
    Value v(std::move(dict));
    v.kind = Kind::name_space;
    return v;
}

bool truthy(const Value& v) {
    if (v.kind == Value::Kind::undefined) return false;
    if (v.kind != Value::Kind::data) return true;
    const Json& j = v.data;
    if (j.is_null()) return false;
    if (j.is_boolean()) return j.get<bool>();
    if (j.is_number_float()) return j.get<double>() != 0.0;
    if (j.is_number()) return j.get<long long>() != 0;
    if (j.is_string()) return !j.get_ref<const std::string&>().empty();  // (json's empty() is
    if (j.is_array() || j.is_object()) return !j.empty();                // false for strings)
    return false;
}

std::string py_float(double d) {
    if (std::isnan(d)) return "nan";
    if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
    if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
    // Shortest round-trip digits, placed the way Python's repr places them: positional for
    // decimal exponents in [-4, 16), scientific (e+XX) outside.
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
    std::string sci(buf, r.ptr);
    const bool neg = sci[0] == '-';
    if (neg) sci.erase(0, 1);
    const std::size_t e = sci.find('e');
    const int exp = std::stoi(sci.substr(e + 1));
    std::string digits = sci.substr(0, e);
    digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
    std::string out;
    if (exp >= -4 && exp < 16) {
        if (exp < 0) {
            out = "0." + std::string(-exp - 1, '0') + digits;
        } else if (static_cast<int>(digits.size()) <= exp + 1) {
            out = digits + std::string(exp + 1 - digits.size(), '0') + ".0";
        } else {
            out = digits.substr(0, exp + 1) + "." + digits.substr(exp + 1);
        }
    } else {
        out = digits.substr(0, 1);
        if (digits.size() > 1) out += "." + digits.substr(1);
        char eb[16];
        std::snprintf(eb, sizeof eb, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
        out += eb;
    }
    return neg ? "-" + out : out;
}

namespace {
std::string repr_string(const std::string& s) {
    const bool dq = s.find('\'') != std::string::npos && s.find('"') == std::string::npos;
    const char q = dq ? '"' : '\'';
    std::string out(1, q);
    for (unsigned char c : s) {
        if (c == '\\' || c == q) {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\r') {
            out += "\\r";
        } else if (c == '\t') {
            out += "\\t";
        } else if (c < 0x20 || c == 0x7f) {
            char b[8];
            std::snprintf(b, sizeof b, "\\x%02x", c);
            out += b;
        } else {
            out += static_cast<char>(c);
        }
    }
    return out + q;
}

std::string json_string(const std::string& s) {
    std::string out = "\"";
    for (unsigned char c : s) {
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\r':
                out += "\\r";
                break;
            case '\t':
                out += "\\t";
                break;
            case '\b':
                out += "\\b";
                break;
            case '\f':
                out += "\\f";
                break;
            default:
                if (c < 0x20) {
                    char b[8];
                    std::snprintf(b, sizeof b, "\\u%04x", c);
                    out += b;
                } else {
                    out += static_cast<char>(c);
                }
        }
    }
    return out + "\"";
}

std::string scalar_json(const Json& j) {
    if (j.is_null()) return "null";
    if (j.is_boolean()) return j.get<bool>() ? "true" : "false";
    if (j.is_number_float()) {
        const double d = j.get<double>();
        if (std::isnan(d)) return "NaN";
        if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
        return py_float(d);
    }
    if (j.is_number_unsigned()) return std::to_string(j.get<unsigned long long>());
    if (j.is_number()) return std::to_string(j.get<long long>());
    return json_string(j.get<std::string>());
}

void dump_json(const Json& j, int indent, bool sort, int level, std::string& out) {
    if (!j.is_array() && !j.is_object()) {
        out += scalar_json(j);
        return;
    }
    const bool obj = j.is_object();
    if (j.empty()) {
        out += obj ? "{}" : "[]";
        return;
    }
    // Python's separators: (', ', ': ') without indent, (',', ': ') with it.
    const std::string pad = indent >= 0 ? "\n" + std::string((level + 1) * indent, ' ') : "";
    const std::string sep = indent >= 0 ? "," : ", ";
    out += obj ? '{' : '[';
    std::vector<const Json*> keys;  // object: key order (sorted on request)
    std::vector<std::pair<std::string, const Json*>> items;
    if (obj)
        for (auto it = j.begin(); it != j.end(); ++it) items.emplace_back(it.key(), &it.value());
    if (sort)
        std::stable_sort(items.begin(), items.end(),
                         [](const auto& a, const auto& b) { return a.first < b.first; });
    const std::size_t n = obj ? items.size() : j.size();
    for (std::size_t i = 0; i < n; ++i) {
        out += i ? sep + pad : pad;
        if (obj) {
            out += json_string(items[i].first) + ": ";
            dump_json(*items[i].second, indent, sort, level + 1, out);
        } else {
            dump_json(j[i], indent, sort, level + 1, out);
        }
    }
    if (indent >= 0) out += "\n" + std::string(level * indent, ' ');
    out += obj ? '}' : ']';
}

bool json_equal(const Json& a, const Json& b) {
    if (a.is_number() || a.is_boolean()) {
        if (!b.is_number() && !b.is_boolean()) return false;
        auto num = [](const Json& x) {
            return x.is_boolean() ? (x.get<bool>() ? 1.0 : 0.0) : x.get<double>();
        };
        if (a.is_number_integer() && b.is_number_integer())
            return a.get<long long>() == b.get<long long>();
        return num(a) == num(b);
    }
    if (a.type() != b.type() || a.size() != b.size()) return false;
    if (a.is_array()) {
        for (std::size_t i = 0; i < a.size(); ++i)
            if (!json_equal(a[i], b[i])) return false;
        return true;
    }
    if (a.is_object()) {
        for (auto it = a.begin(); it != a.end(); ++it) {
            auto f = b.find(it.key());
            if (f == b.end() || !json_equal(it.value(), *f)) return false;
        }
        return true;
    }
    return a == b;
}
}  // namespace

std::string py_repr(const Json& j) {
    if (j.is_null()) return "None";
    if (j.is_boolean()) return j.get<bool>() ? "True" : "False";
    if (j.is_string()) return repr_string(j.get<std::string>());
    if (j.is_number()) return scalar_json(j);
    std::string out = j.is_array() ? "[" : "{";
    bool first = true;
    for (auto it = j.begin(); it != j.end(); ++it) {
        if (!first) out += ", ";
        first = false;
        if (j.is_object()) out += repr_string(it.key()) + ": ";
        out += py_repr(it.value());
    }
    return out + (j.is_array() ? "]" : "}");
}

std::string to_str(const Value& v) {
    switch (v.kind) {
        case Value::Kind::undefined:
            return "";
        case Value::Kind::function:
            return "<function " + v.data.get<std::string>() + ">";
        case Value::Kind::name_space:
            return "<Namespace " + py_repr(v.data) + ">";
        case Value::Kind::data:
            break;
    }
    if (v.data.is_string()) return v.data.get<std::string>();
    if (v.data.is_number_float()) return py_float(v.data.get<double>());
    return py_repr(v.data);
}

bool equal(const Value& a, const Value& b) {
    if (a.is_undefined() || b.is_undefined()) return a.is_undefined() && b.is_undefined();
    if (a.kind != b.kind) return false;
    return json_equal(a.data, b.data);
}

std::string to_json(const Json& j, int indent, bool sort_keys) {
    std::string out;
    dump_json(j, indent, sort_keys, 0, out);
    return out;
}

std::string type_name(const Value& v) {
    switch (v.kind) {
        case Value::Kind::undefined:
            return "Undefined";
        case Value::Kind::function:
            return "function";
        case Value::Kind::name_space:
            return "Namespace";
        case Value::Kind::data:
            break;
    }
    const Json& j = v.data;
    if (j.is_null()) return "NoneType";
    if (j.is_boolean()) return "bool";
    if (j.is_number_float()) return "float";
    if (j.is_number()) return "int";
    if (j.is_string()) return "str";
    return j.is_array() ? "list" : "dict";
}

std::vector<std::size_t> code_point_starts(std::string_view s) {
    std::vector<std::size_t> at;
    for (std::size_t i = 0; i < s.size(); ++i)
        if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) at.push_back(i);
    at.push_back(s.size());
    return at;
}

std::size_t code_point_count(std::string_view s) {
    std::size_t n = 0;
    for (unsigned char c : s) n += (c & 0xC0) != 0x80;
    return n;
}

namespace {
// Python's str.isspace() for one code point given as UTF-8 bytes.
bool py_space(std::string_view cp) {
    if (cp.size() == 1) {
        const unsigned char c = cp[0];
        return c == ' ' || (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x1f);
    }
    static const char* const kSpaces[] = {"\u0085", "\u00a0", "\u1680", "\u2000", "\u2001",
                                          "\u2002", "\u2003", "\u2004", "\u2005", "\u2006",
                                          "\u2007", "\u2008", "\u2009", "\u200a", "\u2028",
                                          "\u2029", "\u202f", "\u205f", "\u3000"};
    for (const char* sp : kSpaces)
        if (cp == sp) return true;
    return false;
}
}  // namespace

std::string py_strip(std::string_view s, bool left, bool right, const std::string* chars) {
    const std::vector<std::size_t> at = code_point_starts(s);
    const std::size_t n = at.size() - 1;
    auto strip_cp = [&](std::size_t i) {
        std::string_view cp = s.substr(at[i], at[i + 1] - at[i]);
        return chars ? std::string_view(*chars).find(cp) != std::string_view::npos : py_space(cp);
    };
    std::size_t b = 0, e = n;
    if (left)
        while (b < e && strip_cp(b)) ++b;
    if (right)
        while (e > b && strip_cp(e - 1)) --e;
    return std::string(s.substr(at[b], at[e] - at[b]));
}

}  // namespace meshlm::jinja
