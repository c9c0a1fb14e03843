// FNV-1a 64-bit: a small, stable (platform- and run-independent) hash for fingerprints and
// cache keys. Not for security.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

namespace meshlm {

struct Fnv1a {
    std::uint64_t h = 1469598103934665603ull;
    void add(const void* data, std::size_t n) {
        const auto* p = static_cast<const unsigned char*>(data);
        for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
    }
    // Length-prefixed, so ("ab","c") and ("a","bc") differ.
    void add(const std::string& s) {
        std::uint64_t n = s.size();
        add(&n, sizeof(n));
        add(s.data(), s.size());
    }
    std::string hex() const {
        char buf[17];
        std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
        return buf;
    }
};

}  // namespace meshlm
