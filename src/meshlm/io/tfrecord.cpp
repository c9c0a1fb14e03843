#include "meshlm/io/tfrecord.h"

#include <array>
#include <cstring>

#include "meshlm/core/error.h"

namespace meshlm {
namespace {

constexpr std::uint32_t kCastagnoli = 0x82F63B78u;  // reflected 0x1EDC6F41

const std::array<std::uint32_t, 256>& crc_table() {
    static const std::array<std::uint32_t, 256> table = [] {
        std::array<std::uint32_t, 256> t{};
        for (std::uint32_t i = 0; i < 256; ++i) {
            std::uint32_t c = i;
            for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (c & 1 ? kCastagnoli : 0);
            t[i] = c;
        }
        return t;
    }();
    return table;
}

std::string le_bytes(std::uint64_t v, int n) {
    std::string s(static_cast<std::size_t>(n), '\0');
    for (int i = 0; i < n; ++i) s[i] = static_cast<char>(v >> (8 * i));
    return s;
}

std::uint64_t read_le(std::string_view s, std::size_t at, int n) {
    std::uint64_t v = 0;
    for (int i = 0; i < n; ++i)
        v |= std::uint64_t(static_cast<unsigned char>(s[at + i])) << (8 * i);
    return v;
}

}  // namespace

std::uint32_t crc32c(std::string_view bytes) {
    const auto& t = crc_table();
    std::uint32_t c = 0xFFFFFFFFu;
    for (const char b : bytes) c = t[(c ^ static_cast<unsigned char>(b)) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

std::uint32_t masked_crc32c(std::string_view bytes) {
    const std::uint32_t c = crc32c(bytes);
    return ((c >> 15) | (c << 17)) + 0xA282EAD8u;
}

std::string tfrecord_frame(std::string_view data) {
    const std::string len = le_bytes(data.size(), 8);
    std::string r = len + le_bytes(masked_crc32c(len), 4);
    r.append(data);
    return r + le_bytes(masked_crc32c(data), 4);
}

std::vector<std::string> tfrecord_records(std::string_view bytes, const std::string& what) {
    std::vector<std::string> out;
    std::size_t at = 0;
    while (at < bytes.size()) {
        if (bytes.size() - at < 12) break;  // torn header
        const std::uint64_t len = read_le(bytes, at, 8);
        if (read_le(bytes, at + 8, 4) != masked_crc32c(bytes.substr(at, 8)))
            MESHLM_INVALID(what, ": record at byte ", at, " has a bad length checksum");
        if (len > bytes.size() - at - 12 || bytes.size() - at - 12 - len < 4) break;  // torn
        const std::string_view data = bytes.substr(at + 12, len);
        if (read_le(bytes, at + 12 + len, 4) != masked_crc32c(data))
            MESHLM_INVALID(what, ": record at byte ", at, " has a bad data checksum");
        out.emplace_back(data);
        at += 16 + len;
    }
    return out;
}

}  // namespace meshlm
