// What the CPU backend runs with, for `meshlm --version` (through kernels/device.h).
#pragma once

#include <string>

namespace meshlm::kernels {

// The vector extensions the kernels use: those compiled in (avx512f, avx2, fma, ...) and, where
// native_bf16() is true, avx512bf16 (found at run time). Space-separated.
std::string cpu_features_in_use();
// The linked oneDNN's version, "MAJOR.MINOR.PATCH", with its commit where the build has one.
std::string onednn_version();

}  // namespace meshlm::kernels
