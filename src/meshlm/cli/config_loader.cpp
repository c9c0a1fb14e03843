#include "meshlm/cli/config_loader.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>

#include "meshlm/cli/suggest.h"
#include "meshlm/cli/yaml_documents.h"
#include "meshlm/core/error.h"

namespace meshlm::config_detail {
namespace {

std::pair<std::string_view, std::string_view> split_key(std::string_view key) {
    const auto dot = key.find('.');
    if (dot == std::string_view::npos) return {std::string_view{}, key};
    return {key.substr(0, dot), key.substr(dot + 1)};
}

// The valid key closest to `key`: whole-key edit distance, or the same leaf name in another
// section at a small penalty (so `model.lr` suggests `optim.lr`). Ties go to table order.
// Empty when nothing is close enough to be a plausible typo.
std::string closest_key(const OptionTable& table, std::string_view key) {
    const auto [section, leaf] = split_key(key);
    const std::size_t limit = 2 + leaf.size() / 4;  // farther is no plausible typo
    std::string best;
    std::size_t best_score = static_cast<std::size_t>(-1);
    for (const auto& o : table.options) {
        if (best_score == 0) break;
        const std::size_t cap = std::min(limit, best_score - 1);  // only a closer one matters
        const auto [o_section, o_leaf] = split_key(o.key);
        const std::size_t penalty = o_section == section ? 0 : 1;
        const std::size_t score =
            std::min(edit_distance(key, o.key, cap), edit_distance(leaf, o_leaf, cap) + penalty);
        if (score < best_score) best_score = score, best = o.key;
    }
    return best_score <= limit ? best : std::string();
}

std::string join(const std::vector<std::string>& items, std::string_view sep) {
    std::string out;
    for (std::size_t i = 0; i < items.size(); ++i) {
        if (i) out += sep;
        out += items[i];
    }
    return out;
}

std::string unknown_key_message(const OptionTable& table, const std::string& key) {
    std::string msg = "unknown config key '" + key + "'";
    const auto section = std::string(split_key(key).first);
    const bool reserved = table.has_section(section) &&
                          std::none_of(table.options.begin(), table.options.end(),
                                       [&](const Option& o) { return o.section == section; });
    if (section.empty())
        msg += " (keys look like section.key)";
    else if (!table.has_section(section))
        msg += " (there is no section '" + section + "'; sections: " + join(table.sections, ", ") +
               ")";
    else if (reserved)
        msg += " (section '" + section + "' is reserved and has no keys yet)";
    if (const auto best = closest_key(table, key); !best.empty())
        return msg + "; did you mean '" + best + "'?";
    if (table.has_section(section) && !reserved) {
        std::vector<std::string> keys;
        for (const auto& o : table.options)
            if (o.section == section) keys.push_back(o.key.substr(section.size() + 1));
        return msg + "; keys in '" + section + "': " + join(keys, ", ");
    }
    return msg;
}

std::string unknown_section_message(const OptionTable& table, const std::string& section) {
    std::string msg = "unknown config section '" + section + "'";
    const std::string best = closest_word(section, table.sections);
    if (!best.empty()) msg += "; did you mean '" + best + "'?";
    return msg + " (sections: " + join(table.sections, ", ") + ")";
}

const char* kind_name(const YAML::Node& n) {
    switch (n.Type()) {
        case YAML::NodeType::Null:
            return "an empty value";
        case YAML::NodeType::Scalar:
            return "a scalar";
        case YAML::NodeType::Sequence:
            return "a sequence";
        case YAML::NodeType::Map:
            return "a mapping";
        default:
            return "an undefined value";
    }
}

RawValue raw_value(const YAML::Node& n) {
    switch (n.Type()) {
        case YAML::NodeType::Scalar:
            return {RawValue::Kind::scalar, n.Scalar()};
        case YAML::NodeType::Sequence: {
            // The items' text, for the options that take a list (StepRange).
            std::string items;
            for (const auto& item : n)
                items += (items.empty() ? "" : ", ") +
                         (item.IsScalar() ? item.Scalar() : std::string("?"));
            return {RawValue::Kind::sequence, items};
        }
        case YAML::NodeType::Map:
            return {RawValue::Kind::map, {}};
        default:
            return {RawValue::Kind::null, {}};
    }
}

}  // namespace

void Loader::set(const std::string& key, const RawValue& value, const Source& src) {
    const Option* opt = table_.find(key);
    if (!opt) return error(src.wrap(unknown_key_message(table_, key)));
    const std::string current = opt->current.empty() ? key : opt->current;
    const std::string before = opt->dump(config_);
    if (auto err = opt->assign(config_, value)) return error(src.wrap(*err));
    // Two names of one key in one source: configs saved before older names stopped being
    // written hold both with one value, which is accepted; two values are refused.
    auto& names = src.file.empty() ? override_names_ : file_names_;
    const auto [seen, fresh] = names.emplace(current, key);
    if (!fresh && seen->second != key && opt->dump(config_) != before)
        return error(src.wrap(key + " and " + seen->second + " are two names of one key (" +
                              current + ") with different values; give only " + current));
    origin_[current] = src;
}

void Loader::load_file(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::exists(path, ec)) MESHLM_INVALID("config file '", path, "' not found");
    if (fs::is_directory(path, ec))
        MESHLM_INVALID("config file '", path, "' is a directory, expected a YAML file");
    std::ifstream in(path, std::ios::binary);
    if (!in.is_open()) MESHLM_INVALID("cannot open config file '", path, "'");
    std::stringstream text;
    if (in.peek() != std::ifstream::traits_type::eof()) text << in.rdbuf();
    if (in.bad()) MESHLM_INVALID("cannot read config file '", path, "'");
    load_text(text.str(), path);
}

void Loader::load_text(const std::string& text, const std::string& path) {
    const YAML::Node root = [&] {
        try {
            return load_single_yaml_document(text, path);
        } catch (const YAML::Exception& e) {
            MESHLM_INVALID(path, ":", e.mark.line + 1, ":", e.mark.column + 1,
                           ": malformed YAML: ", e.msg);
        }
    }();
    if (root.IsNull()) return;  // an empty file: defaults

    const std::string sections = join(table_.sections, ", ");
    if (!root.IsMap())
        throw InvalidInput(
            Source{path, root.Mark(), {}}.wrap("the top level must be a mapping of sections (" +
                                               sections + "), got " + kind_name(root)));

    std::map<std::string, int> seen;  // key (section or section.key) -> line of first sight
    auto first_sight = [&](const std::string& key, const YAML::Node& node) {
        const auto [it, fresh] = seen.emplace(key, node.Mark().line + 1);
        if (!fresh)
            error(Source{path, node.Mark(), {}}.wrap("duplicate key '" + key +
                                                     "' (first set on line " +
                                                     std::to_string(it->second) + ")"));
        return fresh;
    };

    // Range-for keeps each (key, value) pair alive; `it->first` would point into a temporary.
    for (const auto& entry : root) {
        const YAML::Node& name_node = entry.first;
        const YAML::Node& body = entry.second;
        const Source at{path, name_node.Mark(), {}};
        if (!name_node.IsScalar()) {
            error(at.wrap("section names must be plain words (" + sections + ")"));
            continue;
        }
        const std::string section = name_node.Scalar();
        if (!first_sight(section, name_node)) continue;
        if (!table_.has_section(section) && !(body.IsMap() && body.size() > 0)) {
            error(at.wrap(unknown_section_message(table_, section)));
            continue;  // (a non-empty mapping falls through: each key gets its own message)
        }
        if (body.IsNull()) continue;  // `model:` with nothing under it
        if (!body.IsMap()) {
            error(at.wrap("section '" + section + "' must be a mapping of key: value, got " +
                          kind_name(body)));
            continue;
        }
        for (const auto& kv : body) {
            const Source key_at{path, kv.first.Mark(), {}};
            if (!kv.first.IsScalar()) {
                error(key_at.wrap("keys in section '" + section + "' must be plain words"));
                continue;
            }
            const std::string key = section + "." + kv.first.Scalar();
            if (!first_sight(key, kv.first)) continue;
            // A group of keys (model.mup.*) may nest one level deeper.
            const bool group =
                kv.second.IsMap() && !table_.find(key) &&
                std::any_of(table_.options.begin(), table_.options.end(),
                            [&](const auto& o) { return o.key.starts_with(key + "."); });
            if (!group) {
                set(key, raw_value(kv.second), key_at);
                continue;
            }
            for (const auto& sub : kv.second) {
                const Source sub_at{path, sub.first.Mark(), {}};
                const std::string sub_key = key + "." + sub.first.as<std::string>();
                if (first_sight(sub_key, sub.first)) set(sub_key, raw_value(sub.second), sub_at);
            }
        }
    }
}

void Loader::apply_override(const std::string& text) {
    const Source src{{}, YAML::Mark::null_mark(), text};
    const auto eq = text.find('=');
    if (eq == std::string::npos || eq == 0)
        return error("config override '" + text + "' must look like section.key=value");
    const std::string key = text.substr(0, eq);
    const std::string value = text.substr(eq + 1);
    const Option* opt = table_.find(key);
    if (!opt) return error(src.wrap(unknown_key_message(table_, key)));

    // The value is read as a YAML scalar (so 1e-3, true, 'quoted' work). A string option takes
    // the raw text whenever YAML would not give a plain scalar ("", "~", "[x", "a: b").
    RawValue raw{RawValue::Kind::scalar, value};
    try {
        raw = raw_value(YAML::Load(value));
    } catch (const YAML::Exception&) {
        raw = {RawValue::Kind::scalar, value};
    }
    if (opt->is_string && raw.kind != RawValue::Kind::scalar) raw = {RawValue::Kind::scalar, value};
    set(key, raw, src);
}

void Loader::validate() {
    for (const auto& o : table_.options) {
        if (!o.current.empty()) continue;  // checked under its current name
        if (auto err = o.check(config_)) {
            const auto it = origin_.find(o.key);
            error(it == origin_.end() ? *err : it->second.wrap(*err));
        }
    }
    for (const auto& check : table_.cross_checks)
        if (auto err = check(config_)) error(*err);
}

Config Loader::take(const std::string& name) {
    if (errors_.size() == 1) throw InvalidInput(errors_[0]);
    if (!errors_.empty())
        throw InvalidInput(std::to_string(errors_.size()) + " problems in the config:\n  " +
                           join(errors_, "\n  "));
    config_.name = name;
    return std::move(config_);
}

}  // namespace meshlm::config_detail
