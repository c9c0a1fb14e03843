// Byte sizes as people write them: "5GB", "500MB", "1.5GiB", "4096" (bytes). Decimal units are
// powers of 1000 as in Hugging Face's max_shard_size; the binary ones (KiB..TiB) powers of 1024.
#pragma once

#include <cstdint>
#include <string>

namespace meshlm {

// Throws InvalidInput naming `what` (e.g. "--max-shard-size") and the accepted forms.
std::uint64_t parse_byte_size(const std::string& text, const std::string& what);

}  // namespace meshlm
