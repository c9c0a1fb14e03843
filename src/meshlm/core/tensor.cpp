#include "meshlm/core/tensor.h"

namespace meshlm {

std::size_t dtype_size(DType t) {
    switch (t) {
        case DType::f32:
            return 4;
        case DType::i32:
            return 4;
        case DType::bf16:
            return 2;
        case DType::f16:
            return 2;
        case DType::u16:
            return 2;
    }
    return 0;
}

const char* dtype_name(DType t) {
    switch (t) {
        case DType::f32:
            return "f32";
        case DType::i32:
            return "i32";
        case DType::bf16:
            return "bf16";
        case DType::f16:
            return "f16";
        case DType::u16:
            return "u16";
    }
    return "?";
}

Shape::Shape(std::initializer_list<std::int64_t> d) {
    MESHLM_CHECK(d.size() <= kMaxDims, "at most ", kMaxDims, " dims");
    for (auto v : d) dims[ndim++] = v;
}

std::int64_t Shape::numel() const {
    std::int64_t n = 1;
    for (int i = 0; i < ndim; ++i) n *= dims[i];
    return n;
}

bool Shape::operator==(const Shape& o) const {
    if (ndim != o.ndim) return false;
    for (int i = 0; i < ndim; ++i)
        if (dims[i] != o.dims[i]) return false;
    return true;
}

std::string Shape::str() const {
    std::string s = "[";
    for (int i = 0; i < ndim; ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
    return s + "]";
}

}  // namespace meshlm
