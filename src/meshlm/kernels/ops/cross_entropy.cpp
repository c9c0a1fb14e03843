// softmax_cross_entropy's checks and device dispatch (ops/cross_entropy.h).
#include "meshlm/kernels/ops/cross_entropy.h"

#include <cstdint>

#include "meshlm/kernels/kernels.h"
#include "meshlm/kernels/ops/dispatch.h"
#include "meshlm/kernels/ops/rows.h"

namespace meshlm::ops {

void softmax_cross_entropy(const Tensor& logits, const Tensor& losses, const Tensor& targets,
                           float dlogits_scale, float z_loss) {
    constexpr const char* op = "softmax_cross_entropy";
    const Device d =
        common_device(op, {{"logits", logits}, {"losses", losses}, {"targets", targets}});
    expect_f32(op, {{"logits", logits}, {"losses", losses}});
    expect_dtype(op, {"targets", targets}, DType::i32);
    const auto [N, V] = expect_rows(op, {"logits", logits});
    expect_shape(op, {"losses", losses}, Shape{N});
    expect_shape(op, {"targets", targets}, Shape{N});
    kernels::require_device(d, op);
    const auto* t = targets.i32();
    if (d == Device::cpu)
        return kernels::softmax_cross_entropy(logits.f32(), losses.f32(), t, N, V, V, dlogits_scale,
                                              z_loss);
    MESHLM_ON_CUDA(op, kernels::cuda::softmax_cross_entropy(logits.f32(), losses.f32(), t, N, V,
                                                            dlogits_scale, z_loss));
}

}  // namespace meshlm::ops
