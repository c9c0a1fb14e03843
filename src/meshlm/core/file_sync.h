// Durability and integrity helpers for files that must survive a crash: a directory fsync (so a
// rename inside it is on disk) and a CRC-32 of a whole file (zlib's, the one zip and PNG use).
#pragma once

#include <cstdint>
#include <string>

namespace meshlm {

// fsync()s a directory; throws Error when it cannot be opened or synced.
void fsync_dir(const std::string& dir);

// CRC-32 of the file's bytes as 8 lowercase hex digits; throws InvalidInput if it cannot be read.
std::string file_crc32(const std::string& path);

}  // namespace meshlm
