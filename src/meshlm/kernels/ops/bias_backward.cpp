// bias_backward's checks and device dispatch (ops/bias_backward.h).
#include "meshlm/kernels/ops/bias_backward.h"

#include "meshlm/kernels/kernels.h"
#include "meshlm/kernels/ops/dispatch.h"
#include "meshlm/kernels/ops/rows.h"

namespace meshlm::ops {

void bias_backward(const Tensor& db, const Tensor& dy) {
    constexpr const char* op = "bias_backward";
    const Device d = common_device(op, {{"dy", dy}, {"db", db}});
    expect_f32(op, {{"dy", dy}, {"db", db}});
    const auto [N, O] = expect_rows(op, {"dy", dy});
    expect_shape(op, {"db", db}, Shape{O});
    kernels::require_device(d, op);
    if (d == Device::cpu) return kernels::bias_backward(db.f32(), dy.f32(), N, O);
    MESHLM_ON_CUDA(op, kernels::cuda::bias_backward(db.f32(), dy.f32(), N, O));
}

}  // namespace meshlm::ops
