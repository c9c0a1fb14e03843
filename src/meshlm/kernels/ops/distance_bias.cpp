// distance_bias's checks and device dispatch (ops/distance_bias.h).
#include "meshlm/kernels/ops/distance_bias.h"

#include "meshlm/kernels/kernels.h"
#include "meshlm/kernels/ops/dispatch.h"
#include "meshlm/kernels/ops/rows.h"

namespace meshlm::ops {

namespace {

struct Dims {
    int H, L, NB;
};

// rows [H, L] (dist or grad), table [H, NB], buckets i32 [L], one device.
Dims check(const char* op, const Arg& rows, const Arg& table, const Tensor& buckets) {
    const Device d = common_device(op, {rows, table, {"buckets", buckets}});
    expect_f32(op, {rows, table});
    expect_dtype(op, {"buckets", buckets}, DType::i32);
    const auto [H, L] = expect_rows(op, rows);
    const int NB = expect_rows(op, table).C;
    expect_shape(op, table, Shape{H, NB});
    expect_shape(op, {"buckets", buckets}, Shape{L});
    kernels::require_device(d, op);
    return {H, L, NB};
}

}  // namespace

void distance_bias_expand(const Tensor& dist, const Tensor& table, const Tensor& buckets) {
    constexpr const char* op = "distance_bias_expand";
    const auto [H, L, NB] = check(op, {"dist", dist}, {"table", table}, buckets);
    if (dist.device == Device::cpu)
        return kernels::distance_bias_expand(dist.f32(), table.f32(), buckets.i32(), H, L, NB);
    MESHLM_ON_CUDA(
        op, kernels::cuda::distance_bias_expand(dist.f32(), table.f32(), buckets.i32(), H, L, NB));
}

void distance_bias_fold(const Tensor& grad_table, const Tensor& grad, const Tensor& buckets) {
    constexpr const char* op = "distance_bias_fold";
    const auto [H, L, NB] = check(op, {"grad", grad}, {"grad_table", grad_table}, buckets);
    if (grad.device == Device::cpu)
        return kernels::distance_bias_fold(grad_table.f32(), grad.f32(), buckets.i32(), H, L, NB);
    MESHLM_ON_CUDA(op, kernels::cuda::distance_bias_fold(grad_table.f32(), grad.f32(),
                                                         buckets.i32(), H, L, NB));
}

}  // namespace meshlm::ops
