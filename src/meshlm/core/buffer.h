// Owning, 64-byte aligned float buffers. Everything a training step touches is one of these,
// sized before the first step (the static memory plan); nothing reallocates in the step loop.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace meshlm {

struct AlignedFree {
    void operator()(void* p) const noexcept;
};

// The huge page size, and the size from which a buffer is placed and advised for them.
inline constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;
inline constexpr std::size_t kHugeBufferBytes = 2 * kHugePageBytes;

// Allocates `bytes` zero-filled, 64-byte aligned; from kHugeBufferBytes on, 2 MiB aligned and
// advised for transparent huge pages (MADV_HUGEPAGE). Throws on failure.
void* aligned_alloc_zeroed(std::size_t bytes);

template <typename T>
class Buffer {
  public:
    Buffer() = default;
    explicit Buffer(std::size_t n)
        : data_(static_cast<T*>(aligned_alloc_zeroed(n * sizeof(T)))), size_(n) {}

    T* data() { return data_.get(); }
    const T* data() const { return data_.get(); }
    std::size_t size() const { return size_; }
    std::size_t bytes() const { return size_ * sizeof(T); }
    T& operator[](std::size_t i) { return data_.get()[i]; }
    const T& operator[](std::size_t i) const { return data_.get()[i]; }

  private:
    std::unique_ptr<T, AlignedFree> data_;
    std::size_t size_ = 0;
};

// Hands out aligned slices of one buffer, in order. Used to lay out activations once.
class Arena {
  public:
    explicit Arena(std::size_t floats) : buf_(floats), base_(buf_.data()), cap_(floats) {}
    // Over `floats` floats at `base` that the caller owns (device memory: the arena only
    // computes addresses, it never touches them).
    Arena(float* base, std::size_t floats) : base_(base), cap_(floats) {}
    // Returns `n` floats, 16-float aligned. Throws when the plan was too small.
    float* take(std::size_t n);
    std::size_t used() const { return used_; }
    std::size_t capacity() const { return cap_; }
    // Floats needed for a take of n (rounded up to the alignment).
    static std::size_t padded(std::size_t n) { return (n + 15) / 16 * 16; }

  private:
    Buffer<float> buf_;  // owned memory (empty over the caller's)
    float* base_;
    std::size_t cap_;
    std::size_t used_ = 0;
};

}  // namespace meshlm
