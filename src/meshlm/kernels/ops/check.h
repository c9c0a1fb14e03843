// Argument checks of the view ops: every view on one device, the dtype and shape each op
// expects. A failed check throws meshlm::Error naming the op, the argument and what was
// expected, e.g. "layernorm_forward: w has shape [48], expected [64]".
//
// An optional argument is absent when its view has no data (Tensor{}); checks skip it.
//
// Views are dense unless an op takes row strides (Strides::allowed: gemm, rope): common_device()
// refuses any other strided view, so an op that forgets about strides cannot misread one.
#pragma once

#include <cstdint>
#include <initializer_list>

#include "meshlm/core/tensor.h"

namespace meshlm::ops {

struct Arg {
    const char* name;
    const Tensor& t;
};

inline bool present(const Tensor& t) {
    return t.data != nullptr;
}

enum class Strides { dense, allowed };

// The device of the present arguments (the first is required and must be present): throws when
// any two differ, when a required one has no data, or when one is strided and the op takes only
// dense views.
Device common_device(const char* op, std::initializer_list<Arg> required,
                     std::initializer_list<Arg> optional = {}, Strides strides = Strides::dense);

// Throws when a present view is not dense ("x has row stride 96; expected a dense view").
void expect_dense(const char* op, std::initializer_list<Arg> args);
// The row stride of a 2-D view in elements (its columns when dense); throws when it is less.
std::int64_t row_stride(const char* op, const Arg& a);

void expect_dtype(const char* op, const Arg& a, DType want);
void expect_shape(const char* op, const Arg& a, const Shape& want);
// ndim only; returns the view's shape for reading its sizes.
const Shape& expect_ndim(const char* op, const Arg& a, int ndim);
// Sizes that must fit the kernels' int arguments.
int as_int(const char* op, const char* what, std::int64_t v);

}  // namespace meshlm::ops
