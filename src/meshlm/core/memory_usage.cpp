#include "meshlm/core/memory_usage.h"

#include <sys/resource.h>

namespace meshlm {

std::size_t peak_rss_bytes() {
    rusage ru{};
    if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
    return static_cast<std::size_t>(ru.ru_maxrss) * 1024;  // Linux reports KiB
}

}  // namespace meshlm
