// The playground page served at `/`: plain HTML and JavaScript (src/meshlm/infer/playground.html,
// compiled into the binary by CMake; no build step of its own).
#pragma once

#include <string>

namespace meshlm {

const std::string& playground_html();

}  // namespace meshlm
