#include "meshlm/core/buffer.h"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>

#include "meshlm/core/error.h"

namespace meshlm {

void AlignedFree::operator()(void* p) const noexcept {
    std::free(p);
}

void* aligned_alloc_zeroed(std::size_t bytes) {
    if (bytes == 0) return nullptr;
    // Big buffers (weights, gradients, moments, the activation arena, the logits) start on a
    // 2 MiB boundary and ask for transparent huge pages before their first touch: GEMMs and the
    // optimizer stream hundreds of MiB through them, and with 4 KiB pages the TLB misses cost
    // ~2 % of a step (bench/README.md). Where THP is off, madvise fails and nothing changes.
    const std::size_t align = bytes >= kHugeBufferBytes ? kHugePageBytes : 64;
    const std::size_t rounded = (bytes + align - 1) / align * align;
    void* p = std::aligned_alloc(align, rounded);
    if (!p)
        throw Error(detail::concat("out of memory allocating ", bytes, " bytes (",
                                   static_cast<double>(bytes) / (1 << 30), " GiB)"));
    if (align == kHugePageBytes) madvise(p, rounded, MADV_HUGEPAGE);
    std::memset(p, 0, rounded);
    return p;
}

float* Arena::take(std::size_t n) {
    std::size_t need = padded(n);
    MESHLM_CHECK(used_ + need <= cap_, "arena overflow: need ", used_ + need, " floats, planned ",
                 cap_);
    float* p = base_ + used_;
    used_ += need;
    return p;
}

}  // namespace meshlm
