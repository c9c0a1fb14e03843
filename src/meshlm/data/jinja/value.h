// Values of the Jinja subset that chat templates use, with Python's semantics (jinja2 runs on
// Python, and transformers' apply_chat_template renders with it): truthiness, str(), repr(),
// equality, and json.dumps as transformers' `tojson` filter calls it.
//
// A Value is JSON data (ordered: tojson keeps insertion order, as Python dicts do) or one of
// three things JSON has no word for: Jinja's Undefined, a global function (raise_exception,
// namespace, range, strftime_now) and a namespace() object (a dict whose attributes `set` may
// assign inside a loop).
#pragma once

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace meshlm::jinja {

using Json = nlohmann::ordered_json;

// A template that cannot be parsed or rendered; the message names the construct and, where
// known, its line and column.
class TemplateError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

struct Value {
    enum class Kind { data, undefined, function, name_space };
    Kind kind = Kind::data;
    Json data;         // data / name_space: the value; function: its name
    std::string name;  // undefined: the name that was looked up (for the error message)

    Value() = default;
    Value(Json j) : data(std::move(j)) {}  // NOLINT: JSON data is a value as it is
    static Value undefined(std::string what = "");
    static Value function(std::string fn);
    static Value name_space(Json dict);

    bool is_undefined() const { return kind == Kind::undefined; }
    bool is_none() const { return kind == Kind::data && data.is_null(); }
    bool is_string() const { return kind == Kind::data && data.is_string(); }
    bool is_list() const { return kind == Kind::data && data.is_array(); }
    bool is_dict() const {
        return (kind == Kind::data || kind == Kind::name_space) && data.is_object();
    }
    bool is_number() const { return kind == Kind::data && data.is_number(); }
    bool is_int() const { return kind == Kind::data && (data.is_number_integer()); }
    bool is_bool() const { return kind == Kind::data && data.is_boolean(); }
    const std::string& str() const { return data.get_ref<const std::string&>(); }
};

// Python's bool(x) (Undefined is false).
bool truthy(const Value& v);
// Python's str(x) as Jinja prints it ({{ x }}): None -> "None", True -> "True", Undefined -> "".
std::string to_str(const Value& v);
// Python's repr(x) of JSON data.
std::string py_repr(const Json& j);
// Python's repr(float).
std::string py_float(double d);
// Python's ==: numbers by value (True == 1), dicts by content, Undefined equal only to itself.
bool equal(const Value& a, const Value& b);
// transformers' tojson: json.dumps(x, ensure_ascii=False, indent=indent, sort_keys=sort_keys).
std::string to_json(const Json& j, int indent = -1, bool sort_keys = false);
// "string", "int", ... : the Python type name in error messages.
std::string type_name(const Value& v);

// UTF-8 text as Python sees it: indexed by code points, stripped of Unicode whitespace.
std::vector<std::size_t> code_point_starts(std::string_view s);  // byte offsets, + s.size()
std::size_t code_point_count(std::string_view s);
std::string py_strip(std::string_view s, bool left, bool right, const std::string* chars = nullptr);

}  // namespace meshlm::jinja
