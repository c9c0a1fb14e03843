// A host emulation of the CUDA execution model, enough for kernels/cuda/'s kernels to run on a
// CPU: every CUDA thread of a block is a std::thread, blocks run one after another.
// __syncthreads is a block barrier, __shfl_sync / __shfl_xor_sync exchange through a per-warp
// slot array between two warp barriers, a thread that returns drops out of both (as exited
// threads do on a GPU), and shared memory starts as NaN so a read before a write shows up.
// Not modelled: the memory model, occupancy, shared-memory and register limits, and CUDA's own
// math library (glibc's expf / tanhf stand in). run.sh rewrites `k<<<grid, block, smem>>>(...)`
// into emu::Launch{grid, block, smem}(k, ...).
#pragma once

#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __shared__ static  // one block at a time: function-scope statics are its shared memory
#define __launch_bounds__(...)

using std::max;
using std::min;

struct dim3 {
    unsigned x = 1, y = 1, z = 1;
    dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
inline thread_local dim3 threadIdx, blockIdx;
inline dim3 blockDim, gridDim;

enum cudaError_t { cudaSuccess = 0 };
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8 };
inline cudaError_t cudaGetLastError() {
    return cudaSuccess;
}
inline const char* cudaGetErrorName(cudaError_t) {
    return "emulated";
}
inline const char* cudaGetErrorString(cudaError_t) {
    return "emulated";
}
inline cudaError_t cudaGetDevice(int* d) {
    *d = 0;
    return cudaSuccess;
}
inline cudaError_t cudaMalloc(void** p, std::size_t n) {
    *p = ::operator new(n);
    return cudaSuccess;
}
// Stream-ordered allocation and copies: with one host memory and blocks run to completion at
// launch, these are plain allocation and memcpy.
using cudaStream_t = void*;
enum cudaMemcpyKind { cudaMemcpyDeviceToHost = 2, cudaMemcpyDefault = 4 };
inline cudaError_t cudaMallocAsync(void** p, std::size_t n, cudaStream_t) {
    return cudaMalloc(p, n);
}
inline cudaError_t cudaFreeAsync(void* p, cudaStream_t) {
    ::operator delete(p);
    return cudaSuccess;
}
inline cudaError_t cudaMemcpy(void* dst, const void* src, std::size_t n, cudaMemcpyKind) {
    std::memcpy(dst, src, n);
    return cudaSuccess;
}
inline unsigned __float_as_uint(float x) {
    unsigned u;
    std::memcpy(&u, &x, sizeof u);
    return u;
}
inline float __uint_as_float(unsigned u) {
    float x;
    std::memcpy(&x, &u, sizeof x);
    return x;
}
inline cudaError_t cudaFree(void* p) {
    ::operator delete(p);
    return cudaSuccess;
}
template <typename T>
cudaError_t cudaFuncSetAttribute(T*, cudaFuncAttribute, int) {
    return cudaSuccess;
}
inline float __fmul_rn(float a, float b) {
    volatile float r = a * b;  // not fused into a later add
    return r;
}
inline float normcdff(float x) {
    return 0.5f * std::erfc(-x * 0.70710678118654752f);
}

namespace emu {

struct Block {
    std::vector<float> smem;  // dynamic shared memory
    std::unique_ptr<std::barrier<>> all;
    std::vector<std::unique_ptr<std::barrier<>>> warps;
    std::vector<float> slots;  // one per thread, for the shuffles
};
inline Block block;
inline thread_local int linear_id = 0;

inline float* dynamic_smem() {
    return block.smem.data();
}

inline float exchange(float v, int src_lane) {
    const int w = linear_id / 32;
    block.slots[linear_id] = v;
    block.warps[w]->arrive_and_wait();
    const float r = block.slots[w * 32 + src_lane];
    block.warps[w]->arrive_and_wait();
    return r;
}

// A block's threads are made once per launch and walk the grid together: before each block,
// every thread meets the others at `step` and thread 0 gives the block fresh shared memory,
// barriers and slots (threads that returned early dropped out of the last block's), so a
// launch of many small blocks does not pay for making and joining its threads every block.
struct Launch {
    dim3 grid, block_dim;
    std::size_t smem = 0;

    template <typename Kernel, typename... Args>
    void operator()(Kernel kernel, Args... args) const {
        gridDim = grid;
        blockDim = block_dim;
        const int nt = static_cast<int>(block_dim.x * block_dim.y * block_dim.z);
        const unsigned nblocks = grid.x * grid.y * grid.z;
        std::barrier<> step(nt);
        auto fresh_block = [&] {
            block.smem.assign(smem / sizeof(float) + 1, std::nanf(""));
            block.all = std::make_unique<std::barrier<>>(nt);
            block.warps.clear();
            for (int w = 0; w * 32 < nt; ++w)
                block.warps.push_back(std::make_unique<std::barrier<>>(std::min(32, nt - 32 * w)));
            block.slots.assign(nt, 0.f);
        };
        std::vector<std::thread> threads;
        for (int t = 0; t < nt; ++t)
            threads.emplace_back([&, t] {
                linear_id = t;
                threadIdx = dim3(t % block_dim.x, t / block_dim.x % block_dim.y,
                                 t / (block_dim.x * block_dim.y));
                for (unsigned n = 0; n < nblocks; ++n) {
                    step.arrive_and_wait();  // the last block is done with the block state
                    if (t == 0) fresh_block();
                    step.arrive_and_wait();
                    blockIdx = dim3(n % grid.x, n / grid.x % grid.y, n / (grid.x * grid.y));
                    kernel(args...);
                    block.all->arrive_and_drop();
                    block.warps[t / 32]->arrive_and_drop();
                }
            });
        for (auto& th : threads) th.join();
    }
};

}  // namespace emu

#define __syncthreads() ::emu::block.all->arrive_and_wait()
inline float __shfl_sync(unsigned, float v, int src_lane) {
    return emu::exchange(v, src_lane);
}
inline float __shfl_xor_sync(unsigned, float v, int lane_mask) {
    return emu::exchange(v, (emu::linear_id % 32) ^ lane_mask);
}
