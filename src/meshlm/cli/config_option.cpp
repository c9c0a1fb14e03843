#include "meshlm/cli/config_option.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>

#include "meshlm/core/byte_size.h"

namespace meshlm::config_detail {

std::string quote_yaml(const std::string& s) {
    YAML::Emitter e;
    e << YAML::DoubleQuoted << s;
    return e.c_str();
}

std::optional<std::string> parse_step_range(const std::string& items, StepRange& out) {
    const std::string wrong =
        std::string("expected ") + expected_what<StepRange>() + ", got [" + items + "]";
    if (items.empty()) return out = StepRange{}, std::nullopt;
    const auto comma = items.find(", ");
    if (comma == std::string::npos) return wrong;
    long a = 0, b = 0;
    if (parse_scalar(items.substr(0, comma), a) || parse_scalar(items.substr(comma + 2), b) ||
        a < 1 || b < a)
        return wrong;
    out = {a, b};
    return std::nullopt;
}

std::string num(double v) {
    return format_value(v);
}

Rule at_least(double lo) {
    return {">= " + num(lo), [lo](double v) { return v >= lo; }, {}};
}

Rule greater_than(double lo) {
    return {"> " + num(lo), [lo](double v) { return v > lo; }, {}};
}

Rule in_closed_open(double lo, double hi) {
    return {"in [" + num(lo) + ", " + num(hi) + ")",
            [lo, hi](double v) { return v >= lo && v < hi; },
            {}};
}

Rule in_open(double lo, double hi) {
    return {"in (" + num(lo) + ", " + num(hi) + ")",
            [lo, hi](double v) { return v > lo && v < hi; },
            {}};
}

Rule byte_size() {
    return {"a size like 2GB or 512MiB", {}, [](const std::string& v) {
                try {
                    return parse_byte_size(v, "size") > 0;
                } catch (const InvalidInput&) {
                    return false;
                }
            }};
}

Rule one_of(std::vector<std::string> allowed) {
    std::string describe = "one of ";
    for (std::size_t i = 0; i < allowed.size(); ++i) describe += (i ? ", " : "") + allowed[i];
    return {describe, {}, [allowed = std::move(allowed)](const std::string& v) {
                return std::find(allowed.begin(), allowed.end(), v) != allowed.end();
            }};
}

}  // namespace meshlm::config_detail
