// The config reference, generated from the option table (config.h config_options): every key
// with its type, default, range and one-line help, grouped by section. `meshlm config --list`
// prints the text form; docs/config.md is the Markdown form, and a test keeps the two equal.
#pragma once

#include <string>

namespace meshlm {

// Plain text for a terminal: a header line per section, then per key "key  type = default
// (range)" and its help on the next line; older names last.
std::string config_reference_text();

// docs/config.md: a short introduction, then one table per section, then older names.
std::string config_reference_markdown();

}  // namespace meshlm
