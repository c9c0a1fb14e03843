#include "meshlm/core/file_sync.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "meshlm/core/error.h"

namespace meshlm {

void fsync_dir(const std::string& dir) {
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
    if (fd < 0)
        throw Error(detail::concat("cannot open directory ", dir, ": ", std::strerror(errno)));
    const bool ok = ::fsync(fd) == 0;
    const int err = errno;
    ::close(fd);
    if (!ok) throw Error(detail::concat("cannot sync directory ", dir, ": ", std::strerror(err)));
}

std::string file_crc32(const std::string& path) {
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (!f) MESHLM_INVALID("cannot read ", path, ": ", std::strerror(errno));
    std::vector<unsigned char> buf(1 << 20);
    uLong crc = crc32_z(0L, Z_NULL, 0);
    std::size_t n;
    while ((n = std::fread(buf.data(), 1, buf.size(), f)) > 0) crc = crc32_z(crc, buf.data(), n);
    const bool failed = std::ferror(f);
    std::fclose(f);
    if (failed) MESHLM_INVALID("error reading ", path);
    char hex[9];
    std::snprintf(hex, sizeof hex, "%08lx", static_cast<unsigned long>(crc));
    return hex;
}

}  // namespace meshlm
