// Tensor: a non-owning view (data pointer, dtype, shape, device) over memory someone else owns.
// Row-major; weights are stored [out, in] like nn.Linear.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "meshlm/core/error.h"

namespace meshlm {

enum class DType { f32, bf16, f16, i32, u16 };
enum class Device { cpu, cuda };

std::size_t dtype_size(DType t);
const char* dtype_name(DType t);

struct Shape {
    static constexpr int kMaxDims = 4;
    std::array<std::int64_t, kMaxDims> dims{};
    int ndim = 0;

    Shape() = default;
    Shape(std::initializer_list<std::int64_t> d);
    std::int64_t operator[](int i) const { return dims[i]; }
    std::int64_t numel() const;
    bool operator==(const Shape& o) const;
    std::string str() const;  // "[2, 64]"
};

struct Tensor {
    void* data = nullptr;
    DType dtype = DType::f32;
    Shape shape;
    Device device = Device::cpu;

    float* f32() const {
        MESHLM_CHECK(dtype == DType::f32, "tensor is ", dtype_name(dtype), ", not f32");
        return static_cast<float*>(data);
    }
    std::int64_t numel() const { return shape.numel(); }
};

}  // namespace meshlm
