// Checks shared by the row-wise ops (norms, GLU, cross-entropy): every view f32 unless said
// otherwise, [N, C] row views and per-row / per-column vectors.
#pragma once

#include <initializer_list>

#include "meshlm/kernels/ops/check.h"

namespace meshlm::ops {

// Each present view is f32.
void expect_f32(const char* op, std::initializer_list<Arg> args);
// x is [N, C]; returns {N, C}.
struct Rows {
    int N, C;
};
Rows expect_rows(const char* op, const Arg& x);

}  // namespace meshlm::ops
