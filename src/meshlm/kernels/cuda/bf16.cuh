// bf16 on the device with the CPU's bits (cpu/bf16.cpp): round to nearest, ties to even, on
// the fp32 bits (no special case for NaN); widening by a 16-bit shift.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace meshlm::kernels::cuda {

__device__ inline std::uint16_t bits_bf16(float x) {
    const std::uint32_t u = __float_as_uint(x);
    return static_cast<std::uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

__device__ inline float widen(std::uint16_t h) {
    return __uint_as_float(static_cast<std::uint32_t>(h) << 16);
}

__device__ inline float round_bf16(float x) {
    return widen(bits_bf16(x));
}

}  // namespace meshlm::kernels::cuda
