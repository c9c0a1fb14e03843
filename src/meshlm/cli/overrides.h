// --config.section.key=value on commands other than `train`: every command checks each override
// against the option table (an unknown key is refused by name, with the closest valid one), and
// refuses a valid key it would not read, instead of ignoring it.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace meshlm {

// Checks `overrides` ("section.key=value") against the table, then refuses any whose key is not
// among `used`: an exact key ("data.tokenizer"), or a prefix ending in '.' ("data."). Errors
// name `command` ("meshlm sample") and the keys it reads.
void require_used_overrides(const std::vector<std::string>& overrides, const std::string& command,
                            const std::vector<std::string>& used);

// Whether an override sets `key`, and the value the last one gives it.
bool overridden(const std::vector<std::string>& overrides, const std::string& key);
std::optional<std::string> override_value(const std::vector<std::string>& overrides,
                                          const std::string& key);

}  // namespace meshlm
