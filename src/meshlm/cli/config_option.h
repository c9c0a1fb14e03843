// The option framework of the run configuration (config.h): strict scalar parsing and exact
// formatting per field type, constraints (Rule), and the table of type-erased options that
// Section<S>::add builds from member pointers, so that parse / dump / check exist once as
// templates. The table itself is built from config_options_<section>.cpp (config_table.h).
//
// exports (namespace config_detail): RawValue, read_value, format_value, Rule and its makers,
//          Option, CrossCheck, OptionTable, Section
#pragma once

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "meshlm/cli/config.h"
#include "meshlm/core/error.h"

namespace meshlm::config_detail {

// ---------------------------------------------------------------------------------------------
// Scalars: strict parsing and exact formatting for each field type.

// A value as it arrives from YAML: a scalar's text, or which other kind of node it was.
struct RawValue {
    enum class Kind { null, scalar, sequence, map };
    Kind kind = Kind::scalar;
    std::string text;  // scalar text; empty for the other kinds
};

template <typename T>
constexpr bool is_number_v = std::is_arithmetic_v<T> && !std::is_same_v<T, bool>;

template <typename T>
const char* type_name() {
    if constexpr (std::is_same_v<T, StepRange>)
        return "[int, int]";
    else if constexpr (std::is_same_v<T, bool>)
        return "bool";
    else if constexpr (std::is_same_v<T, std::string>)
        return "string";
    else if constexpr (std::is_same_v<T, float>)
        return "float";
    else if constexpr (std::is_same_v<T, double>)
        return "double";
    else if constexpr (std::is_unsigned_v<T>)
        return "uint64";
    else
        return "int";
}

template <typename T>
const char* expected_what() {
    if constexpr (std::is_same_v<T, StepRange>)
        return "a list of two steps [first, last] with 1 <= first <= last, or [] for none";
    else if constexpr (std::is_same_v<T, bool>)
        return "a boolean (true or false)";
    else if constexpr (std::is_same_v<T, std::string>)
        return "a string";
    else if constexpr (std::is_floating_point_v<T>)
        return "a number";
    else if constexpr (std::is_unsigned_v<T>)
        return "a non-negative integer";
    else
        return "an integer";
}

// A double-quoted YAML string (escapes quotes, backslashes, control characters).
std::string quote_yaml(const std::string& s);

// YAML text for a value; floats use the shortest text that reads back to the same bits.
template <typename T>
std::string format_value(const T& v) {
    if constexpr (std::is_same_v<T, StepRange>) {
        if (v.empty()) return "[]";
        return "[" + std::to_string(v.first) + ", " + std::to_string(v.last) + "]";
    } else if constexpr (std::is_same_v<T, bool>) {
        return v ? "true" : "false";
    } else if constexpr (std::is_same_v<T, std::string>) {
        return quote_yaml(v);
    } else {
        char buf[64];
        const auto r = std::to_chars(buf, buf + sizeof(buf), v);
        return std::string(buf, r.ptr);
    }
}

// The value as quoted in an error message.
template <typename T>
std::string show_value(const T& v) {
    if constexpr (std::is_same_v<T, std::string>)
        return "'" + v + "'";
    else
        return format_value(v);
}

// Parses a scalar into `out`; returns what went wrong ("expected an integer, got '3.5'").
template <typename T>
std::optional<std::string> parse_scalar(const std::string& text, T& out) {
    const std::string wrong =
        std::string("expected ") + expected_what<T>() + ", got '" + text + "'";
    if constexpr (std::is_same_v<T, StepRange>) {
        return wrong;  // a list, not a scalar (read_value)
    } else if constexpr (std::is_same_v<T, std::string>) {
        out = text;
        return std::nullopt;
    } else if constexpr (std::is_same_v<T, bool>) {
        if (text == "true" || text == "True" || text == "TRUE") return out = true, std::nullopt;
        if (text == "false" || text == "False" || text == "FALSE") return out = false, std::nullopt;
        return wrong;
    } else {
        // Decimal only, optional sign; "+" is skipped since from_chars does not take it.
        std::string_view s = text;
        const bool plus = s.starts_with('+');
        if (plus) s.remove_prefix(1);
        const bool minus = s.starts_with('-');
        if (s.empty() || s.starts_with('+') || (minus && (plus || std::is_unsigned_v<T>)))
            return wrong;
        T value{};
        std::from_chars_result r;
        if constexpr (std::is_floating_point_v<T>)
            r = std::from_chars(s.data(), s.data() + s.size(), value, std::chars_format::general);
        else
            r = std::from_chars(s.data(), s.data() + s.size(), value, 10);
        if (r.ec == std::errc::result_out_of_range && r.ptr == s.data() + s.size())
            return std::string("'") + text + "' is out of range for " + type_name<T>();
        if (r.ec != std::errc() || r.ptr != s.data() + s.size()) return wrong;
        if constexpr (std::is_floating_point_v<T>) {
            if (!std::isfinite(value))
                return std::string("expected a finite number, got '") + text + "'";
        }
        out = value;
        return std::nullopt;
    }
}

// A StepRange from a sequence's items joined by ", " ("" = none).
std::optional<std::string> parse_step_range(const std::string& items, StepRange& out);

template <typename T>
std::optional<std::string> read_value(const RawValue& raw, T& out) {
    switch (raw.kind) {
        case RawValue::Kind::scalar:
            return parse_scalar(raw.text, out);
        case RawValue::Kind::null:
            if constexpr (std::is_same_v<T, std::string>) return out.clear(), std::nullopt;
            return std::string("expected ") + expected_what<T>() + ", got an empty value";
        case RawValue::Kind::sequence:
            if constexpr (std::is_same_v<T, StepRange>) return parse_step_range(raw.text, out);
            return std::string("expected ") + expected_what<T>() + ", got a sequence";
        case RawValue::Kind::map:
            return std::string("expected ") + expected_what<T>() + ", got a mapping";
    }
    return std::nullopt;
}

// ---------------------------------------------------------------------------------------------
// Constraints. A Rule is the "must be ..." half of a message plus the test; numeric rules test the
// value as a double (exact for every field type we have), string rules the text.

struct Rule {
    std::string describe;                          // "> 0", "in [0, 1)", "one of a, b"
    std::function<bool(double)> number;            // for int / uint64 / float / double fields
    std::function<bool(const std::string&)> text;  // for string fields
};

// The value as text in a rule's description.
std::string num(double v);
Rule at_least(double lo);
Rule greater_than(double lo);
Rule in_closed_open(double lo, double hi);  // [lo, hi)
Rule in_open(double lo, double hi);         // (lo, hi)
Rule byte_size();                           // a byte size such as 2GB or 512MiB (core/byte_size.h)
Rule one_of(std::vector<std::string> allowed);

// ---------------------------------------------------------------------------------------------
// The option table: one type-erased Option per key, built by Section<S>::add from a member
// pointer, so parse / dump / check exist once as templates.

struct Option {
    std::string section;  // "model"
    std::string key;      // "model.n_layer"
    std::string type;     // "int", "float", ... (help text)
    std::string help;
    std::string constraint;  // Rule::describe; empty = any value of the type
    std::string current;     // for an older name: the key it stands for ("model.norm_eps")
    bool is_string = false;
    // Stores `value` into the field; returns "<key>: expected ..." on a type mismatch.
    std::function<std::optional<std::string>(Config&, const RawValue&)> assign;
    std::function<std::string(const Config&)> dump;  // YAML text of the field's value
    // "<key> must be <rule> (got <value>)" when the resolved value breaks the rule.
    std::function<std::optional<std::string>(const Config&)> check;
};

// A rule involving several keys, run on the resolved config.
using CrossCheck = std::function<std::optional<std::string>(const Config&)>;

struct OptionTable {
    std::vector<std::string> sections;  // dump order; reserved sections have no options
    std::vector<Option> options;        // grouped by section, in declaration order
    std::vector<CrossCheck> cross_checks;

    const Option* find(std::string_view key) const {
        for (const auto& o : options)
            if (o.key == key) return &o;
        return nullptr;
    }
    bool has_section(std::string_view name) const {
        return std::find(sections.begin(), sections.end(), name) != sections.end();
    }
};

template <typename S>
class Section {
  public:
    Section(OptionTable& table, std::string name, S Config::*member)
        : table_(table), name_(std::move(name)), member_(member) {
        table_.sections.push_back(name_);
    }

    template <typename T>
    Section& add(const std::string& name, T S::*field, std::string help, Rule rule = {}) {
        static_assert(is_number_v<T> || std::is_same_v<T, bool> || std::is_same_v<T, std::string> ||
                          std::is_same_v<T, StepRange>,
                      "config fields are int, uint64, float, double, bool, string or StepRange");
        constexpr bool numeric = is_number_v<T>, textual = std::is_same_v<T, std::string>;
        MESHLM_CHECK((numeric || !rule.number) && (textual || !rule.text), "rule '", rule.describe,
                     "' does not fit the type of ", name_, ".", name);
        Option o;
        o.section = name_;
        o.key = name_ + "." + name;
        o.type = type_name<T>();
        o.help = std::move(help);
        o.constraint = rule.describe;
        o.is_string = std::is_same_v<T, std::string>;
        const auto member = member_;
        o.assign = [member, field, key = o.key](Config& c,
                                                const RawValue& raw) -> std::optional<std::string> {
            T value{};
            if (auto err = read_value(raw, value)) return key + ": " + *err;
            (c.*member).*field = std::move(value);
            return std::nullopt;
        };
        o.dump = [member, field](const Config& c) { return format_value((c.*member).*field); };
        o.check = [member, field, key = o.key,
                   rule = std::move(rule)](const Config& c) -> std::optional<std::string> {
            const T& v = (c.*member).*field;
            bool ok = true;
            if constexpr (is_number_v<T>) {
                if (rule.number) ok = rule.number(static_cast<double>(v));
            } else if constexpr (std::is_same_v<T, std::string>) {
                if (rule.text) ok = rule.text(v);
            }
            if (ok) return std::nullopt;
            return key + " must be " + rule.describe + " (got " + show_value(v) + ")";
        };
        table_.options.push_back(std::move(o));
        return *this;
    }

    // Marks the option added last as an older name of `current` (a key of this section): read,
    // never written, and refused beside `current` with another value in one config.
    Section& older_name_of(const std::string& current) {
        table_.options.back().current = name_ + "." + current;
        return *this;
    }

  private:
    OptionTable& table_;
    std::string name_;
    S Config::*member_;
};

}  // namespace meshlm::config_detail
