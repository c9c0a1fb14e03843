#include "meshlm/cli/overrides.h"

#include <algorithm>

#include "meshlm/cli/config.h"
#include "meshlm/core/error.h"

namespace meshlm {

namespace {
std::string key_of(const std::string& override_text) {
    return override_text.substr(0, override_text.find('='));
}
}  // namespace

void require_used_overrides(const std::vector<std::string>& overrides, const std::string& command,
                            const std::vector<std::string>& used) {
    check_config_overrides(overrides);
    for (const std::string& o : overrides) {
        const std::string key = key_of(o);
        const bool read = std::any_of(used.begin(), used.end(), [&](const std::string& u) {
            return u.ends_with('.') ? key.starts_with(u) : key == u;
        });
        if (read) continue;
        if (used.empty())
            MESHLM_INVALID(command, " reads no config key: --config.", o,
                           " would change nothing; leave it out");
        std::string keys;
        for (const auto& u : used)
            keys += (keys.empty() ? "" : ", ") + u + (u.ends_with('.') ? "*" : "");
        MESHLM_INVALID(command, " does not read ", key, " (--config.", o,
                       "): it would change nothing; the keys it reads: ", keys);
    }
}

bool overridden(const std::vector<std::string>& overrides, const std::string& key) {
    return override_value(overrides, key).has_value();
}

std::optional<std::string> override_value(const std::vector<std::string>& overrides,
                                          const std::string& key) {
    std::optional<std::string> value;
    for (const auto& o : overrides)
        if (key_of(o) == key) value = o.substr(key.size() + 1);
    return value;
}

}  // namespace meshlm
