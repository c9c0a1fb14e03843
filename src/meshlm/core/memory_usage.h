// What the process really uses, for memory reports next to the planned bytes.
#pragma once

#include <cstddef>

namespace meshlm {

// Peak resident set size of this process so far, in bytes (getrusage's ru_maxrss).
std::size_t peak_rss_bytes();

}  // namespace meshlm
