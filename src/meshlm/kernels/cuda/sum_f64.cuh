// Deterministic double sums for the reductions the host reads (sum_squares, Adafactor's sums of
// squares): a grid that depends on n only writes one partial per block, one block adds the
// partials in a fixed order and the host gets the total. Every sum is a fixed-order tree in
// shared memory, with no float atomics, so the same inputs give the same bits on every run.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace meshlm::kernels::cuda {

constexpr int kSumThreads = 256;       // a power of two: the tree halves it
constexpr unsigned kSumBlocks = 1024;  // at most this many partials

// Blocks of kSumThreads for a sum over n elements: n alone picks them, not the device.
inline unsigned sum_blocks(std::size_t n) {
    const std::size_t b = (n + kSumThreads - 1) / kSumThreads;
    return static_cast<unsigned>(b < 1 ? 1 : (b > kSumBlocks ? kSumBlocks : b));
}

// The sum of every thread's v in a fixed tree; blockDim.x == kSumThreads and every thread of the
// block calls it. Only thread 0's result is the sum.
__device__ inline double block_sum_f64(double v) {
    __shared__ double s[kSumThreads];
    __syncthreads();  // a previous call's readers are done with `s`
    s[threadIdx.x] = v;
    __syncthreads();
    for (int h = kSumThreads / 2; h > 0; h >>= 1) {
        if (static_cast<int>(threadIdx.x) < h) s[threadIdx.x] += s[threadIdx.x + h];
        __syncthreads();
    }
    return s[0];
}

// `count` device doubles, stream-ordered on the legacy default stream (no device-wide sync).
class DeviceDoubles {
  public:
    explicit DeviceDoubles(std::size_t count);
    ~DeviceDoubles();
    DeviceDoubles(const DeviceDoubles&) = delete;
    DeviceDoubles& operator=(const DeviceDoubles&) = delete;
    double* data() const { return p_; }

  private:
    double* p_ = nullptr;
};

// The sum of partials[0, count) in a fixed order, copied to the host (waits for the device).
// Overwrites partials[0].
double sum_to_host(double* partials, unsigned count);

// host[0, count) = device[0, count) (waits for the device).
void copy_to_host(double* host, const double* device, std::size_t count);

}  // namespace meshlm::kernels::cuda
