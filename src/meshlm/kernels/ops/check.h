// Argument checks of the view ops: every view on one device, the dtype and shape each op
// expects. A failed check throws meshlm::Error naming the op, the argument and what was
// expected, e.g. "layernorm_forward: w has shape [48], expected [64]".
//
// An optional argument is absent when its view has no data (Tensor{}); checks skip it.
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

// The device of the present arguments (the first is required and must be present): throws when
// any two differ, or when a required one has no data.
Device common_device(const char* op, std::initializer_list<Arg> required,
                     std::initializer_list<Arg> optional = {});

void expect_dtype(const char* op, const Arg& a, DType want);
void expect_shape(const char* op, const Arg& a, const Shape& want);
// ndim only; returns the view's shape for reading its sizes.
const Shape& expect_ndim(const char* op, const Arg& a, int ndim);
// Sizes that must fit the kernels' int arguments.
int as_int(const char* op, const char* what, std::int64_t v);

}  // namespace meshlm::ops
