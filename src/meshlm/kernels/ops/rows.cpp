// The row-wise ops' shared checks (ops/rows.h).
#include "meshlm/kernels/ops/rows.h"

namespace meshlm::ops {

void expect_f32(const char* op, std::initializer_list<Arg> args) {
    for (const Arg& a : args)
        if (present(a.t)) expect_dtype(op, a, DType::f32);
}

Rows expect_rows(const char* op, const Arg& x) {
    const Shape& s = expect_ndim(op, x, 2);
    return {as_int(op, "rows", s[0]), as_int(op, "columns", s[1])};
}

}  // namespace meshlm::ops
