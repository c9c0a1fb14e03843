#include "meshlm/core/buffer.h"

#include <cstdlib>
#include <cstring>

#include "meshlm/core/error.h"

namespace meshlm {

void AlignedFree::operator()(void* p) const noexcept {
    std::free(p);
}

void* aligned_alloc_zeroed(std::size_t bytes) {
    if (bytes == 0) return nullptr;
    std::size_t rounded = (bytes + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, rounded);
    if (!p)
        throw Error(detail::concat("out of memory allocating ", bytes, " bytes (",
                                   static_cast<double>(bytes) / (1 << 30), " GiB)"));
    std::memset(p, 0, rounded);
    return p;
}

float* Arena::take(std::size_t n) {
    std::size_t need = padded(n);
    MESHLM_CHECK(used_ + need <= buf_.size(), "arena overflow: need ", used_ + need,
                 " floats, planned ", buf_.size());
    float* p = buf_.data() + used_;
    used_ += need;
    return p;
}

}  // namespace meshlm
