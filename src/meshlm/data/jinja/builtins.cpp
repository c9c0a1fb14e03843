#include "meshlm/data/jinja/builtins.h"

#include <algorithm>
#include <cctype>
#include <ctime>
#include <set>

#include "meshlm/data/jinja/parser.h"

namespace meshlm::jinja {

namespace {
const std::set<std::string> kFilters = {
    "trim",      "tojson",     "length",     "count",  "string",  "lower",  "upper",
    "title",     "capitalize", "first",      "last",   "list",    "join",   "default",
    "d",         "selectattr", "rejectattr", "select", "reject",  "map",    "items",
    "replace",   "int",        "float",      "abs",    "reverse", "indent", "safe",
    "wordcount", "unique",     "sum",        "min",    "max"};
const std::set<std::string> kTests = {
    "defined", "undefined", "none",    "string",   "number",   "integer", "float", "boolean",
    "true",    "false",     "mapping", "iterable", "sequence", "even",    "odd",   "divisibleby",
    "equalto", "eq",        "ne",      "in",       "lower",    "upper"};
const std::set<std::string> kFunctions = {"raise_exception", "namespace", "range", "strftime_now",
                                          "dict"};
const std::set<std::string> kMethods = {
    "strip",      "lstrip", "rstrip",     "startswith", "endswith", "upper",  "lower", "title",
    "capitalize", "split",  "replace",    "find",       "count",    "join",   "items", "keys",
    "values",     "get",    "splitlines", "isdigit",    "isalpha",  "isspace"};

[[noreturn]] void type_error(const std::string& what) {
    throw TemplateError(what);
}

const Value* kwarg(const Kwargs& kw, const char* name) {
    for (const auto& [k, v] : kw)
        if (k == name) return &v;
    return nullptr;
}

// Positional argument i, else keyword `name`, else null.
const Value* arg(const Args& a, const Kwargs& kw, std::size_t i, const char* name) {
    return i < a.size() ? &a[i] : kwarg(kw, name);
}

const std::string& need_str(const Value& v, const char* what) {
    if (v.is_undefined()) undefined_error(v);
    if (!v.is_string()) type_error(std::string(what) + " needs a string, got " + type_name(v));
    return v.str();
}

long long need_int(const Value& v, const char* what) {
    if (!v.is_int() && !v.is_bool()) type_error(std::string(what) + " needs an integer");
    return v.is_bool() ? v.data.get<bool>() : v.data.get<long long>();
}

// ASCII case mapping: the roles and markers templates transform are ASCII (Python maps all of
// Unicode; non-ASCII letters pass through unchanged here).
std::string map_case(const std::string& s, int mode) {  // 0 lower, 1 upper, 2 title, 3 capitalize
    std::string out = s;
    bool word_start = true;
    for (std::size_t i = 0; i < out.size(); ++i) {
        const unsigned char c = out[i];
        const bool alpha = std::isalpha(c);
        bool up = mode == 1 || (mode == 2 && word_start) || (mode == 3 && i == 0);
        out[i] = static_cast<char>(up ? std::toupper(c) : std::tolower(c));
        word_start = !alpha && c < 0x80;
    }
    return out;
}

Value attribute_of(const Value& v, const std::string& path) {
    Value cur = v;
    std::size_t start = 0;
    while (start <= path.size()) {
        const std::size_t dot = path.find('.', start);
        const std::string key = path.substr(start, dot == std::string::npos ? dot : dot - start);
        if (!cur.is_dict() || !cur.data.contains(key)) return Value::undefined(key);
        cur = Value(cur.data[key]);
        if (dot == std::string::npos) break;
        start = dot + 1;
    }
    return cur;
}

Json list_of(const std::vector<Value>& items) {
    Json out = Json::array();
    for (const Value& v : items) out.push_back(v.data);
    return out;
}

std::vector<std::string> py_split(const std::string& s, const Value* sep, long long maxsplit) {
    std::vector<std::string> parts;
    if (!sep || sep->is_none()) {  // runs of whitespace, none at the ends
        std::string rest = py_strip(s, true, false);
        while (!rest.empty()) {
            if (maxsplit >= 0 && static_cast<long long>(parts.size()) == maxsplit) {
                parts.push_back(rest);
                break;
            }
            std::size_t k = 0;
            while (k < rest.size() && !std::isspace(static_cast<unsigned char>(rest[k]))) ++k;
            parts.push_back(rest.substr(0, k));
            rest = py_strip(rest.substr(k), true, false);
        }
        return parts;
    }
    const std::string& d = need_str(*sep, "split");
    if (d.empty()) type_error("empty separator");
    std::size_t start = 0, at;
    while ((at = s.find(d, start)) != std::string::npos &&
           (maxsplit < 0 || static_cast<long long>(parts.size()) < maxsplit)) {
        parts.push_back(s.substr(start, at - start));
        start = at + d.size();
    }
    parts.push_back(s.substr(start));
    return parts;
}

std::string replace_all(const std::string& s, const std::string& a, const std::string& b,
                        long long count) {
    if (a.empty()) return s;
    std::string out;
    std::size_t start = 0, at;
    long long n = 0;
    while ((count < 0 || n < count) && (at = s.find(a, start)) != std::string::npos) {
        out += s.substr(start, at - start) + b;
        start = at + a.size();
        ++n;
    }
    return out + s.substr(start);
}

bool starts_or_ends(const std::string& s, const Value& what, bool start) {
    std::vector<Value> options = what.is_list() ? iterate(what) : std::vector<Value>{what};
    for (const Value& o : options) {
        const std::string& p = need_str(o, start ? "startswith" : "endswith");
        if (p.size() <= s.size() &&
            (start ? s.compare(0, p.size(), p) : s.compare(s.size() - p.size(), p.size(), p)) == 0)
            return true;
    }
    return false;
}

Value select_items(const std::string& name, const Value& v, const Args& a) {
    // selectattr(attr, test, arg...) / rejectattr / select(test, arg...) / reject.
    const bool by_attr = name == "selectattr" || name == "rejectattr";
    const bool keep = name == "selectattr" || name == "select";
    std::size_t k = 0;
    std::string attr;
    if (by_attr) {
        if (a.empty()) type_error(name + " needs an attribute");
        attr = need_str(a[k++], name.c_str());
    }
    std::string test = k < a.size() ? need_str(a[k++], name.c_str()) : "";
    if (!test.empty() && !known_test(test)) type_error("unsupported test '" + test + "'");
    const Args test_args(a.begin() + static_cast<long>(k), a.end());
    Json out = Json::array();
    for (const Value& item : iterate(v)) {
        const Value x = by_attr ? attribute_of(item, attr) : item;
        const bool pass = test.empty() ? truthy(x) : apply_test(test, x, test_args);
        if (pass == keep) out.push_back(item.data);
    }
    return out;
}

Value string_method(const std::string& s, const std::string& name, const Args& a,
                    const Kwargs& kw) {
    const Value* a0 = arg(a, kw, 0, name == "split" ? "sep" : "chars");
    if (name == "strip" || name == "lstrip" || name == "rstrip") {
        const std::string* chars = a0 && !a0->is_none() ? &need_str(*a0, "strip") : nullptr;
        return Json(py_strip(s, name != "rstrip", name != "lstrip", chars));
    }
    if (name == "startswith" || name == "endswith") {
        if (!a0) type_error(name + " needs an argument");
        return Json(starts_or_ends(s, *a0, name == "startswith"));
    }
    if (name == "upper" || name == "lower" || name == "title" || name == "capitalize")
        return Json(map_case(s, name == "lower"   ? 0
                                : name == "upper" ? 1
                                : name == "title" ? 2
                                                  : 3));
    if (name == "split") {
        const Value* m = arg(a, kw, 1, "maxsplit");
        Json out = Json::array();
        for (auto& p : py_split(s, a0, m ? need_int(*m, "split") : -1)) out.push_back(p);
        return out;
    }
    if (name == "splitlines") {
        Json lines = Json::array();
        std::size_t start = 0, at;
        while ((at = s.find('\n', start)) != std::string::npos) {
            lines.push_back(s.substr(start, at - start));
            start = at + 1;
        }
        if (start < s.size()) lines.push_back(s.substr(start));
        return lines;
    }
    if (name == "replace") {
        if (a.size() < 2) type_error("replace needs two arguments");
        const Value* c = arg(a, kw, 2, "count");
        return Json(replace_all(s, need_str(a[0], "replace"), need_str(a[1], "replace"),
                                c ? need_int(*c, "replace") : -1));
    }
    if (name == "find" || name == "count") {
        const std::string& sub = need_str(a0 ? *a0 : Value(), name.c_str());
        if (name == "find") {
            const std::size_t at = s.find(sub);
            return at == std::string::npos ? Json(-1) : Json(code_point_count(s.substr(0, at)));
        }
        long long n = 0;
        for (std::size_t at = 0; (at = s.find(sub, at)) != std::string::npos;
             at += std::max<std::size_t>(sub.size(), 1))
            ++n;
        return Json(n);
    }
    if (name == "join") {
        std::string out;
        bool first = true;
        for (const Value& x : iterate(a0 ? *a0 : Value::undefined("iterable"))) {
            if (!first) out += s;
            first = false;
            out += need_str(x, "join");
        }
        return Json(out);
    }
    if (name == "isdigit" || name == "isalpha" || name == "isspace") {
        if (s.empty()) return Json(false);
        for (unsigned char c : s)
            if (!(name == "isdigit"   ? std::isdigit(c)
                  : name == "isalpha" ? std::isalpha(c)
                                      : std::isspace(c)))
                return Json(false);
        return Json(true);
    }
    type_error("'str' object has no method '" + name + "'");
}
}  // namespace

bool known_filter(const std::string& n) {
    return kFilters.count(n) > 0;
}
bool known_test(const std::string& n) {
    return kTests.count(n) > 0;
}
bool known_function(const std::string& n) {
    return kFunctions.count(n) > 0;
}
bool known_method(const std::string& n) {
    return kMethods.count(n) > 0;
}

void undefined_error(const Value& v) {
    throw TemplateError("'" + (v.name.empty() ? std::string("value") : v.name) + "' is undefined");
}

std::vector<Value> iterate(const Value& v) {
    std::vector<Value> out;
    if (v.is_undefined()) return out;
    if (v.is_list()) {
        for (const Json& x : v.data) out.emplace_back(x);
    } else if (v.is_dict()) {
        for (auto it = v.data.begin(); it != v.data.end(); ++it) out.emplace_back(Json(it.key()));
    } else if (v.is_string()) {
        const std::string& s = v.str();
        const auto at = code_point_starts(s);
        for (std::size_t i = 0; i + 1 < at.size(); ++i)
            out.emplace_back(Json(s.substr(at[i], at[i + 1] - at[i])));
    } else {
        type_error("'" + type_name(v) + "' object is not iterable");
    }
    return out;
}

bool apply_test(const std::string& name, const Value& v, const Args& a) {
    const Json& j = v.data;
    const bool data = v.kind == Value::Kind::data;
    if (name == "defined") return !v.is_undefined();
    if (name == "undefined") return v.is_undefined();
    if (name == "none") return v.is_none();
    if (name == "string") return v.is_string();
    if (name == "number") return data && (j.is_number() || j.is_boolean());
    if (name == "integer") return v.is_int();
    if (name == "float") return data && j.is_number_float();
    if (name == "boolean") return v.is_bool();
    if (name == "true") return v.is_bool() && j.get<bool>();
    if (name == "false") return v.is_bool() && !j.get<bool>();
    if (name == "mapping") return v.is_dict();
    if (name == "iterable") return v.is_undefined() || v.is_string() || v.is_list() || v.is_dict();
    if (name == "sequence") return v.is_string() || v.is_list() || v.is_dict();
    if (name == "lower") return v.is_string() && map_case(v.str(), 0) == v.str();
    if (name == "upper") return v.is_string() && map_case(v.str(), 1) == v.str();
    if (name == "even" || name == "odd") {
        const long long n = need_int(v, name.c_str());
        return ((n % 2) == 0) == (name == "even");
    }
    if (a.empty()) type_error("test '" + name + "' needs an argument");
    if (name == "divisibleby")
        return need_int(v, "divisibleby") % need_int(a[0], "divisibleby") == 0;
    if (name == "equalto" || name == "eq") return equal(v, a[0]);
    if (name == "ne") return !equal(v, a[0]);
    if (name == "in") {
        for (const Value& x : iterate(a[0]))
            if (equal(x, v)) return true;
        return a[0].is_string() && v.is_string() && a[0].str().find(v.str()) != std::string::npos;
    }
    type_error("unsupported test '" + name + "'");
}

Value call_function(const std::string& name, const Args& a, const Kwargs& kw) {
    if (name == "raise_exception")
        throw RaisedError(a.empty() ? std::string("raise_exception() called") : to_str(a[0]));
    if (name == "dict") {  // transformers' TemplateDict: dict(**kwargs)
        Json d = Json::object();
        for (const auto& [k, v] : kw) d[k] = v.data;
        return d;
    }
    if (name == "namespace") {
        Json d = Json::object();
        if (!a.empty() && a[0].is_dict()) d = a[0].data;
        for (const auto& [k, v] : kw) d[k] = v.data;
        return Value::name_space(std::move(d));
    }
    if (name == "range") {
        long long start = 0, stop = 0, step = 1;
        if (a.size() == 1) stop = need_int(a[0], "range");
        if (a.size() >= 2) start = need_int(a[0], "range"), stop = need_int(a[1], "range");
        if (a.size() >= 3) step = need_int(a[2], "range");
        if (step == 0) type_error("range() step must not be zero");
        Json out = Json::array();
        for (long long i = start; step > 0 ? i < stop : i > stop; i += step) out.push_back(i);
        return out;
    }
    if (name == "strftime_now") {
        const std::time_t t = std::time(nullptr);
        std::tm tm{};
        localtime_r(&t, &tm);
        char buf[256];
        const std::string& fmt = need_str(a.empty() ? Value() : a[0], "strftime_now");
        const std::size_t n = std::strftime(buf, sizeof buf, fmt.c_str(), &tm);
        return Json(std::string(buf, n));
    }
    type_error("unsupported function '" + name + "'");
}

Value call_method(const Value& obj, const std::string& name, const Args& a, const Kwargs& kw) {
    if (obj.is_undefined()) undefined_error(obj);
    if (obj.is_string()) return string_method(obj.str(), name, a, kw);
    if (obj.is_dict() && obj.kind == Value::Kind::data) {
        const Json& d = obj.data;
        if (name == "items" || name == "keys" || name == "values") {
            Json out = Json::array();
            for (auto it = d.begin(); it != d.end(); ++it)
                out.push_back(name == "items"  ? Json::array({it.key(), it.value()})
                              : name == "keys" ? Json(it.key())
                                               : it.value());
            return out;
        }
        if (name == "get") {
            if (a.empty()) type_error("get needs a key");
            const std::string& k = need_str(a[0], "get");
            if (d.contains(k)) return Value(d[k]);
            return a.size() > 1 ? a[1] : Value(Json(nullptr));
        }
    }
    type_error("'" + type_name(obj) + "' object has no method '" + name + "'");
}

namespace {
// The filters over lists and dicts (apply_filter passes on what it does not know).
Value collection_filter(const std::string& name, const Value& v, const Args& a, const Kwargs& kw) {
    if (name == "list") return list_of(iterate(v));
    if (name == "first" || name == "last") {
        std::vector<Value> items = iterate(v);
        if (items.empty()) return Value::undefined(name);
        return name == "first" ? items.front() : items.back();
    }
    if (name == "reverse") {
        std::vector<Value> items = iterate(v);
        std::reverse(items.begin(), items.end());
        if (v.is_string()) {
            std::string s;
            for (const Value& x : items) s += x.str();
            return Json(s);
        }
        return list_of(items);
    }
    if (name == "join") {
        const Value* sep = arg(a, kw, 0, "d");
        const Value* attr = arg(a, kw, 1, "attribute");
        std::string out;
        bool first = true;
        for (const Value& x : iterate(v)) {
            if (!first && sep) out += to_str(*sep);
            first = false;
            out += to_str(attr ? attribute_of(x, to_str(*attr)) : x);
        }
        return Json(out);
    }
    if (name == "selectattr" || name == "rejectattr" || name == "select" || name == "reject")
        return select_items(name, v, a);
    if (name == "map") {
        std::vector<Value> out;
        const Value* attr = kwarg(kw, "attribute");
        for (const Value& x : iterate(v)) {
            if (attr) {
                Value y = attribute_of(x, to_str(*attr));
                const Value* def = kwarg(kw, "default");
                out.push_back(y.is_undefined() && def ? *def : y);
            } else {
                if (a.empty()) type_error("map needs a filter name or attribute=");
                const std::string f = need_str(a[0], "map");
                if (!known_filter(f)) type_error("unsupported filter '" + f + "'");
                out.push_back(apply_filter(f, x, Args(a.begin() + 1, a.end()), {}));
            }
        }
        return list_of(out);
    }
    if (name == "items") {
        if (v.is_undefined()) return Json::array();
        return call_method(v, "items", {}, {});
    }
    if (name == "unique") {
        Json out = Json::array();
        for (const Value& x : iterate(v))
            if (std::none_of(out.begin(), out.end(),
                             [&](const Json& y) { return equal(x, Value(y)); }))
                out.push_back(x.data);
        return out;
    }
    if (name == "sum" || name == "min" || name == "max") {
        std::vector<Value> items = iterate(v);
        if (name == "sum") {
            double s = 0;
            bool ints = true;
            for (const Value& x : items) {
                if (!x.is_number()) type_error("sum needs numbers");
                ints = ints && x.is_int();
                s += x.data.get<double>();
            }
            return ints ? Json(static_cast<long long>(s)) : Json(s);
        }
        if (items.empty()) return Value::undefined(name);
        Value best = items[0];
        for (const Value& x : items)
            if (name == "min" ? x.data < best.data : best.data < x.data) best = x;
        return best;
    }
    type_error("unsupported filter '" + name + "'");
}
}  // namespace

Value apply_filter(const std::string& name, const Value& v, const Args& a, const Kwargs& kw) {
    if (name == "default" || name == "d") {
        const Value* b = arg(a, kw, 1, "boolean");
        const bool use = v.is_undefined() || (b && truthy(*b) && !truthy(v));
        return use ? (a.empty() ? Value(Json("")) : a[0]) : v;
    }
    if (name == "safe") return v;
    if (name == "string") return Json(to_str(v));
    if (name == "trim") {
        const Value* c = arg(a, kw, 0, "chars");
        const std::string* chars = c && !c->is_none() ? &need_str(*c, "trim") : nullptr;
        return Json(py_strip(to_str(v), true, true, chars));
    }
    if (name == "lower" || name == "upper" || name == "title" || name == "capitalize")
        return string_method(to_str(v), name, {}, {});
    if (name == "tojson") {
        if (v.is_undefined()) undefined_error(v);
        const Value* ind = arg(a, kw, 0, "indent");
        const Value* sk = kwarg(kw, "sort_keys");
        return Json(to_json(
            v.data, ind && !ind->is_none() ? static_cast<int>(need_int(*ind, "indent")) : -1,
            sk && truthy(*sk)));
    }
    if (name == "length" || name == "count") {
        if (v.is_string()) return Json(code_point_count(v.str()));
        if (v.is_undefined()) return Json(0);
        if (v.is_list() || v.is_dict()) return Json(v.data.size());
        type_error("object of type '" + type_name(v) + "' has no len()");
    }
    if (name == "replace") {
        if (a.size() < 2) type_error("replace needs two arguments");
        const Value* c = arg(a, kw, 2, "count");
        return Json(
            replace_all(to_str(v), to_str(a[0]), to_str(a[1]), c ? need_int(*c, "replace") : -1));
    }
    if (name == "int" || name == "float" || name == "abs") {
        double d = 0;
        if (v.is_number() || v.is_bool())
            d = v.is_bool() ? v.data.get<bool>() : v.data.get<double>();
        else if (v.is_string())
            try {
                d = std::stod(v.str());
            } catch (...) {
                d = 0;
            }
        if (name == "abs")
            return v.is_int() ? Json(std::llabs(v.data.get<long long>())) : Json(std::abs(d));
        return name == "int" ? Json(static_cast<long long>(d)) : Json(d);
    }
    if (name == "indent") {
        const Value* w = arg(a, kw, 0, "width");
        const Value* first = arg(a, kw, 1, "first");
        const Value* blank = arg(a, kw, 2, "blank");
        const std::string pad =
            w && w->is_string() ? w->str() : std::string(w ? need_int(*w, "indent") : 4, ' ');
        const std::string s = to_str(v);
        std::string out;
        std::size_t start = 0;
        bool first_line = true;
        while (true) {
            const std::size_t nl = s.find('\n', start);
            const std::string line = s.substr(start, nl == std::string::npos ? nl : nl - start);
            const bool indent_it = (first_line ? first && truthy(*first) : true) &&
                                   (!line.empty() || (blank && truthy(*blank)));
            out += (indent_it ? pad : "") + line;
            if (nl == std::string::npos) break;
            out += '\n';
            start = nl + 1;
            first_line = false;
        }
        return Json(out);
    }
    if (name == "wordcount") return Json(py_split(to_str(v), nullptr, -1).size());
    return collection_filter(name, v, a, kw);
}

}  // namespace meshlm::jinja
