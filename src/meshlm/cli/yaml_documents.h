// Reading the one YAML document of a config file, around a hang in yaml-cpp 0.7 (Debian's):
// YAML::LoadAll never returns on a stream that starts with a stray ',' -- each pass yields an
// empty document without consuming the token, so it allocates documents until memory runs out
// (found by fuzz/config_yaml.cpp).
//
// exports: load_single_yaml_document
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

namespace meshlm {

// The document `text` holds (a null node for an empty text). Throws YAML::Exception for
// malformed YAML (a document that starts where the previous one did is reported as such, at its
// position), and meshlm::InvalidInput naming `name` when the text holds more than one document
// ("holds 2 YAML documents": counting stops at the second).
YAML::Node load_single_yaml_document(const std::string& text, const std::string& name);

}  // namespace meshlm
