// TFRecord framing, the container of TensorBoard event files: each record is
//   uint64 length (little-endian) | uint32 masked CRC32C of those 8 bytes | data |
//   uint32 masked CRC32C of data
// (tensorflow/core/lib/io/record_writer.h). CRC32C is the Castagnoli polynomial, reflected.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace meshlm {

std::uint32_t crc32c(std::string_view bytes);
// TensorFlow's mask: a CRC stored next to the data it covers, rotated and offset so that the
// CRC of a string holding CRCs stays well distributed.
std::uint32_t masked_crc32c(std::string_view bytes);
// One record around `data`.
std::string tfrecord_frame(std::string_view data);
// The records of a file's bytes, in order; throws InvalidInput naming `what` on a bad length or
// CRC. A torn last record (a run killed mid-write) ends the list instead.
std::vector<std::string> tfrecord_records(std::string_view bytes, const std::string& what);

}  // namespace meshlm
