#include "meshlm/cli/validators.h"

#include <charconv>
#include <functional>

namespace meshlm {
namespace {

// Shortest text that reads back to v ("0", "1", "0.5", "4096").
std::string shortest(double v) {
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
}

CLI::Validator number_rule(const std::string& rule, std::function<bool(double)> ok) {
    return CLI::Validator(
        [rule, ok](std::string& text) -> std::string {
            double v = 0;
            const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
            if (r.ec != std::errc() || r.ptr != text.data() + text.size())
                return "expected a number, got '" + text + "'";
            if (!ok(v)) return "must be " + rule + " (got " + text + ")";
            return {};
        },
        rule);
}

}  // namespace

CLI::Validator at_least(double lo) {
    return number_rule(">= " + shortest(lo), [lo](double v) { return v >= lo; });
}

CLI::Validator positive() {
    return number_rule("> 0", [](double v) { return v > 0; });
}

CLI::Validator in_range(double lo, double hi) {
    return number_rule("in [" + shortest(lo) + ", " + shortest(hi) + "]",
                       [lo, hi](double v) { return v >= lo && v <= hi; });
}

}  // namespace meshlm
