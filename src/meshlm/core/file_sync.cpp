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

void Crc32::add(const void* data, std::size_t bytes) {
    crc_ = static_cast<std::uint32_t>(
        crc32_z(crc_, static_cast<const unsigned char*>(data), static_cast<z_size_t>(bytes)));
}

std::string Crc32::hex() const {
    char hex[9];
    std::snprintf(hex, sizeof hex, "%08lx", static_cast<unsigned long>(crc_));
    return hex;
}

std::string file_crc32(const std::string& path) {
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (!f) MESHLM_INVALID("cannot read ", path, ": ", std::strerror(errno));
    std::vector<unsigned char> buf(1 << 20);
    Crc32 crc;
    std::size_t n;
    while ((n = std::fread(buf.data(), 1, buf.size(), f)) > 0) crc.add(buf.data(), n);
    const bool failed = std::ferror(f);
    std::fclose(f);
    if (failed) MESHLM_INVALID("error reading ", path);
    return crc.hex();
}

}  // namespace meshlm
