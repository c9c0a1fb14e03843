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

Tensor Tensor::columns(std::int64_t c0, std::int64_t n) const {
    MESHLM_CHECK(shape.ndim == 2, "columns of a ", shape.str(), " view: only 2-D views have them");
    MESHLM_CHECK(c0 >= 0 && n >= 0 && c0 + n <= shape[1], "columns [", c0, ", ", c0 + n, ") of a ",
                 shape.str(), " view");
    Tensor t = *this;
    t.data = static_cast<char*>(data) + c0 * static_cast<std::int64_t>(dtype_size(dtype));
    t.shape = Shape{shape[0], n};
    t.ld = ld ? ld : shape[1];
    return t;
}

}  // namespace meshlm
