// CLI11 validators whose messages read well: "must be >= 0 (got -1)" instead of CLI11's range
// with the type's maximum spelled out in 300 digits.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace meshlm {

CLI::Validator at_least(double lo);             // v >= lo
CLI::Validator positive();                      // v > 0
CLI::Validator in_range(double lo, double hi);  // lo <= v <= hi

}  // namespace meshlm
