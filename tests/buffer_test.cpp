// Buffer allocation: alignment, zero fill, and the huge page advice on big buffers.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

#include "meshlm/core/buffer.h"

namespace meshlm {
namespace {

// The VmFlags of the mapping in /proc/self/smaps that holds address p ("" when none does).
std::string vm_flags_at(const void* p) {
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    std::ifstream in("/proc/self/smaps");
    std::string line;
    bool inside = false;
    while (std::getline(in, line)) {
        std::uintptr_t lo = 0, hi = 0;
        char dash = 0;
        std::istringstream head(line);
        if (head >> std::hex >> lo >> dash >> hi && dash == '-') {
            inside = lo <= a && a < hi;
            continue;
        }
        if (inside && line.rfind("VmFlags:", 0) == 0) return line;
    }
    return "";
}

bool thp_available() {
    std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
    std::string mode;
    std::getline(in, mode);
    return !mode.empty() && mode.find("[never]") == std::string::npos;
}

TEST(Buffer, SmallBuffersAre64ByteAlignedAndZero) {
    Buffer<float> b(1000);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b.data()) % 64, 0u);
    for (std::size_t i = 0; i < b.size(); ++i) ASSERT_EQ(b[i], 0.f) << i;
}

TEST(Buffer, BigBuffersStartOnAHugePageAndAskForHugePages) {
    const std::size_t n = kHugeBufferBytes / sizeof(float) + 123;  // not a whole number of pages
    Buffer<float> b(n);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b.data()) % kHugePageBytes, 0u);
    for (std::size_t i = 0; i < n; i += 4093) ASSERT_EQ(b[i], 0.f) << i;
    ASSERT_EQ(b[n - 1], 0.f);
    if (!thp_available()) GTEST_SKIP() << "transparent huge pages are off on this kernel";
    // "hg": the mapping carries MADV_HUGEPAGE (whether the kernel found huge pages or not).
    const std::string flags = vm_flags_at(b.data());
    ASSERT_FALSE(flags.empty()) << "no mapping holds the buffer in /proc/self/smaps";
    EXPECT_NE(flags.find(" hg"), std::string::npos) << flags;
    // A buffer under the threshold is left as malloc gives it.
    Buffer<float> small(kHugeBufferBytes / sizeof(float) / 4);
    EXPECT_EQ(vm_flags_at(small.data()).find(" hg"), std::string::npos);
}

}  // namespace
}  // namespace meshlm
