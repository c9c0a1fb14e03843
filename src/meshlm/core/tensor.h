// Tensor: a non-owning view (data pointer, dtype, shape, device) over memory someone else owns.
// Row-major; weights are stored [out, in] like nn.Linear. A 2-D view may have a row stride
// wider than its rows (a block of another view's columns); every other view is dense.
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
    // Row stride in elements of a 2-D view whose rows are not adjacent: 0 (or shape[1]) is
    // dense. The ops that take strided views say so; the rest refuse them (ops/check.h).
    std::int64_t ld = 0;

    float* f32() const {
        MESHLM_CHECK(dtype == DType::f32, "tensor is ", dtype_name(dtype), ", not f32");
        return static_cast<float*>(data);
    }
    // The i32 elements (tokens, positions, tables); null for an absent view.
    std::int32_t* i32() const {
        if (!data) return nullptr;
        MESHLM_CHECK(dtype == DType::i32, "tensor is ", dtype_name(dtype), ", not i32");
        return static_cast<std::int32_t*>(data);
    }
    std::int64_t numel() const { return shape.numel(); }
    bool dense() const { return ld == 0 || (shape.ndim == 2 && ld == shape[1]); }
    // Columns [c0, c0 + n) of a 2-D view: the same rows at this view's row stride.
    Tensor columns(std::int64_t c0, std::int64_t n) const;
};

// Views of memory the caller owns, e.g. the model's buffers. The pointer may be const: an op
// writes only the views it documents as outputs. A null pointer makes an absent view (an
// optional argument left out).
inline Tensor view(const float* p, Shape s, Device d) {
    return Tensor{const_cast<float*>(p), DType::f32, s, d};
}
inline Tensor view(const std::uint16_t* p, Shape s, Device d) {  // bf16 bits
    return Tensor{const_cast<std::uint16_t*>(p), DType::bf16, s, d};
}
inline Tensor view(const std::int32_t* p, Shape s, Device d) {
    return Tensor{const_cast<std::int32_t*>(p), DType::i32, s, d};
}
// n elements of a flat buffer (parameters, gradients, optimizer state) as a 1-D view.
template <typename T>
Tensor flat(const T* p, std::size_t n, Device d) {
    return view(p, {static_cast<std::int64_t>(n)}, d);
}

}  // namespace meshlm
