// The loader of the run configuration (config.h): YAML files and "section.key=value" overrides
// into a Config through the option table, remembering where each key's value came from so that
// errors found after resolution point at the file line or the override. Every problem is
// collected and thrown together by take().
//
// exports (namespace config_detail): Source, Loader
#pragma once

#include <yaml-cpp/yaml.h>

#include <map>
#include <string>
#include <vector>

#include "meshlm/cli/config_option.h"

namespace meshlm::config_detail {

// Where a value came from, to prefix (file position) or suffix (override) messages.
struct Source {
    std::string file;  // non-empty for a YAML file
    YAML::Mark mark;
    std::string override_text;  // non-empty for an override

    std::string wrap(const std::string& msg) const {
        if (!file.empty()) {
            if (mark.is_null()) return file + ": " + msg;
            return file + ":" + std::to_string(mark.line + 1) + ":" +
                   std::to_string(mark.column + 1) + ": " + msg;
        }
        if (!override_text.empty()) return msg + " (from override '" + override_text + "')";
        return msg;
    }
};

class Loader {
  public:
    explicit Loader(const OptionTable& table) : table_(table) {}

    void load_file(const std::string& path);
    // YAML text read as the file `name` (in messages).
    void load_text(const std::string& text, const std::string& name);
    // The built-in default recipe as the bottom layer: its keys do not count as given.
    void load_default_recipe() {
        load_text(default_recipe_yaml(), kDefaultRecipe);
        origin_.clear();
        file_names_.clear();
    }
    void apply_override(const std::string& text);
    void validate();
    Config take(const std::string& name);
    // The keys (current names) the file or an override set so far.
    std::vector<std::string> keys_given() const {
        std::vector<std::string> keys;
        for (const auto& [key, src] : origin_) keys.push_back(key);
        return keys;
    }

  private:
    void set(const std::string& key, const RawValue& value, const Source& src);
    void error(std::string msg) { errors_.push_back(std::move(msg)); }

    const OptionTable& table_;
    Config config_;
    std::map<std::string, Source> origin_;  // key -> where its current value came from
    // current key -> the name it was given by, in the file and in the overrides
    std::map<std::string, std::string> file_names_, override_names_;
    std::vector<std::string> errors_;
};

}  // namespace meshlm::config_detail
