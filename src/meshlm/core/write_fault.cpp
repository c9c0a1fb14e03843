#include "meshlm/core/write_fault.h"

#include <cerrno>
#include <cstdlib>
#include <string_view>

#include "meshlm/core/error.h"

namespace meshlm {
namespace {

int errno_named(std::string_view name) {
    if (name == "ENOSPC") return ENOSPC;
    if (name == "EIO") return EIO;
    if (name == "EDQUOT") return EDQUOT;
    if (name == "EFBIG") return EFBIG;
    return 0;
}

}  // namespace

std::optional<WriteFault> write_fault_for(const std::string& path) {
    const char* env = std::getenv("MESHLM_FAULT_WRITE");
    if (!env || !*env) return std::nullopt;
    const std::string_view spec(env);
    const auto colon = spec.find(':');
    const int error = errno_named(spec.substr(0, colon));
    if (colon == std::string_view::npos || error == 0)
        throw Error(detail::concat("MESHLM_FAULT_WRITE='", spec,
                                   "' must be ERROR:PATH_PART[:BYTES] with ERROR one of ENOSPC, "
                                   "EIO, EDQUOT, EFBIG"));
    std::string_view part = spec.substr(colon + 1);
    WriteFault f;
    f.error = error;
    if (const auto at = part.rfind(':'); at != std::string_view::npos) {
        f.at = std::strtoull(std::string(part.substr(at + 1)).c_str(), nullptr, 10);
        part = part.substr(0, at);
    }
    if (path.find(part) == std::string::npos) return std::nullopt;
    return f;
}

}  // namespace meshlm
