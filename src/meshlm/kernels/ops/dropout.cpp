// dropout's checks and device dispatch (ops/dropout.h).
#include "meshlm/kernels/ops/dropout.h"

#include "meshlm/core/error.h"
#include "meshlm/kernels/kernels.h"
#include "meshlm/kernels/ops/dispatch.h"
#include "meshlm/kernels/ops/rows.h"

namespace meshlm::ops {

void dropout(const Tensor& x, const DropoutMask& m) {
    constexpr const char* op = "dropout";
    const Device d = common_device(op, {{"x", x}});
    expect_f32(op, {{"x", x}});
    const auto [N, C] = expect_rows(op, {"x", x});
    if (!(m.rate >= 0.f && m.rate < 1.f))
        throw Error(detail::concat(op, ": rate ", m.rate, " outside [0, 1)"));
    if (m.row0 < 0) throw Error(detail::concat(op, ": row0 ", m.row0, " < 0"));
    kernels::require_device(d, op);
    if (d == Device::cpu) return kernels::dropout(x.f32(), N, C, m.rate, m.seed, m.stream, m.row0);
    MESHLM_ON_CUDA(op, kernels::cuda::dropout(x.f32(), N, C, m.rate, m.seed, m.stream, m.row0));
}

}  // namespace meshlm::ops
