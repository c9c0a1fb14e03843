// Durability and integrity helpers for files that must survive a crash: a directory fsync (so a
// rename inside it is on disk) and CRC-32s (zlib's, the one zip and PNG use) of a whole file or
// of byte ranges in turn.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace meshlm {

// fsync()s a directory; throws Error when it cannot be opened or synced.
void fsync_dir(const std::string& dir);

// A running CRC-32 over byte ranges added in order; hex(): 8 lowercase hex digits.
class Crc32 {
  public:
    void add(const void* data, std::size_t bytes);
    std::string hex() const;

  private:
    std::uint32_t crc_ = 0;
};

// CRC-32 of the file's bytes as 8 lowercase hex digits; throws InvalidInput if it cannot be read.
std::string file_crc32(const std::string& path);

}  // namespace meshlm
