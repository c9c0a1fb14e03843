// The vocabulary-parallel cross-entropy's checks and device dispatch (ops/vocab_parallel.h).
#include "meshlm/kernels/ops/vocab_parallel.h"

#include <cstdint>

#include "meshlm/kernels/ops/dispatch.h"
#include "meshlm/kernels/ops/rows.h"
#include "meshlm/kernels/vocab_parallel.h"

namespace meshlm::ops {

namespace {

struct Logits {
    Device d;
    int N, Vl, ld;
};

// The checks every phase shares: logits [N, Vl] at a row stride, targets i32 [N], row_max f32
// [N] (when present), on one device.
Logits check_logits(const char* op, const Tensor& logits, const Tensor& targets,
                    const Tensor& row_max, std::initializer_list<Arg> more) {
    const Device d =
        common_device(op, {{"logits", logits}, {"targets", targets}}, more, Strides::allowed);
    expect_dense(op, more);
    expect_f32(op, {{"logits", logits}, {"row_max", row_max}});
    expect_dtype(op, {"targets", targets}, DType::i32);
    const auto [N, Vl] = expect_rows(op, {"logits", logits});
    expect_shape(op, {"targets", targets}, Shape{N});
    if (present(row_max)) expect_shape(op, {"row_max", row_max}, Shape{N});
    kernels::require_device(d, op);
    return {d, N, Vl, as_int(op, "row stride", row_stride(op, {"logits", logits}))};
}

}  // namespace

void ce_row_max(const Tensor& row_max, const Tensor& logits, const Tensor& targets) {
    constexpr const char* op = "ce_row_max";
    const Logits s = check_logits(op, logits, targets, row_max, {{"row_max", row_max}});
    if (s.d == Device::cpu)
        return kernels::ce_row_max(row_max.f32(), logits.f32(), targets.i32(), s.N, s.Vl, s.ld);
    MESHLM_ON_CUDA(
        op, kernels::cuda::ce_row_max(row_max.f32(), logits.f32(), targets.i32(), s.N, s.Vl, s.ld));
}

void ce_row_sums(const Tensor& stats, const Tensor& logits, const Tensor& targets,
                 const Tensor& row_max, int v0, bool store) {
    constexpr const char* op = "ce_row_sums";
    const Logits s =
        check_logits(op, logits, targets, row_max, {{"stats", stats}, {"row_max", row_max}});
    expect_f32(op, {{"stats", stats}});
    expect_shape(op, {"stats", stats}, Shape{s.N, 2});
    if (s.d == Device::cpu)
        return kernels::ce_row_sums(stats.f32(), logits.f32(), targets.i32(), row_max.f32(), v0,
                                    s.N, s.Vl, s.ld, store);
    MESHLM_ON_CUDA(op, kernels::cuda::ce_row_sums(stats.f32(), logits.f32(), targets.i32(),
                                                  row_max.f32(), v0, s.N, s.Vl, s.ld, store));
}

void ce_finish(const Tensor& logits, const Tensor& losses, const Tensor& targets,
               const Tensor& row_max, const Tensor& stats, int v0, float dlogits_scale,
               float z_loss) {
    constexpr const char* op = "ce_finish";
    const Logits s = check_logits(op, logits, targets, row_max,
                                  {{"losses", losses}, {"row_max", row_max}, {"stats", stats}});
    expect_f32(op, {{"losses", losses}, {"stats", stats}});
    expect_shape(op, {"losses", losses}, Shape{s.N});
    expect_shape(op, {"stats", stats}, Shape{s.N, 2});
    if (s.d == Device::cpu)
        return kernels::ce_finish(logits.f32(), losses.f32(), targets.i32(), row_max.f32(),
                                  stats.f32(), v0, s.N, s.Vl, s.ld, dlogits_scale, z_loss);
    MESHLM_ON_CUDA(
        op, kernels::cuda::ce_finish(logits.f32(), losses.f32(), targets.i32(), row_max.f32(),
                                     stats.f32(), v0, s.N, s.Vl, s.ld, dlogits_scale, z_loss));
}

}  // namespace meshlm::ops
