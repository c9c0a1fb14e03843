// rope's checks and device dispatch (ops/rope.h).
#include "meshlm/kernels/ops/rope.h"

#include <cstdint>

#include "meshlm/core/error.h"
#include "meshlm/kernels/kernels.h"
#include "meshlm/kernels/ops/dispatch.h"
#include "meshlm/kernels/ops/rows.h"

namespace meshlm::ops {

namespace {

constexpr int kMaxPairs = 512;  // cpu/rope.cpp's per-row table

template <bool kForward>
void rope(const char* op, const Tensor& x, const Tensor& pos, const Tensor& inv_freq,
          const RopeHeads& r) {
    const Device d =
        common_device(op, {{"x", x}, {"inv_freq", inv_freq}}, {{"pos", pos}}, Strides::allowed);
    expect_dense(op, {{"inv_freq", inv_freq}, {"pos", pos}});
    expect_f32(op, {{"x", x}, {"inv_freq", inv_freq}});
    const auto [N, W] = expect_rows(op, {"x", x});
    const int ld = as_int(op, "row stride", row_stride(op, {"x", x}));
    if (r.rope_dim < 0 || r.rope_dim % 2 != 0 || r.rope_dim > r.head_dim ||
        r.rope_dim / 2 > kMaxPairs)
        throw Error(detail::concat(op, ": rope_dim ", r.rope_dim, " must be even, <= head_dim ",
                                   r.head_dim, " and <= ", 2 * kMaxPairs));
    if (r.col0 < 0 || r.heads < 0 ||
        static_cast<std::int64_t>(r.col0) + static_cast<std::int64_t>(r.heads) * r.head_dim > W)
        throw Error(detail::concat(op, ": heads ", r.heads, " x ", r.head_dim, " from column ",
                                   r.col0, " do not fit rows of ", W));
    expect_shape(op, {"inv_freq", inv_freq}, Shape{r.rope_dim / 2});
    if (present(pos)) {
        expect_dtype(op, {"pos", pos}, DType::i32);
        expect_shape(op, {"pos", pos}, Shape{N});
    } else if (r.T < 1) {
        throw Error(detail::concat(op, ": without pos, T must be >= 1 (got ", r.T, ")"));
    }
    kernels::require_device(d, op);
    float* rows = x.f32() + r.col0;
    const auto* p = pos.i32();
    const auto* f = inv_freq.f32();
    if (d == Device::cpu) {
        if (kForward)
            return kernels::rope_forward(rows, ld, p, N, r.T, r.heads, r.head_dim, r.rope_dim,
                                         r.interleaved, f);
        return kernels::rope_backward(rows, ld, p, N, r.T, r.heads, r.head_dim, r.rope_dim,
                                      r.interleaved, f);
    }
    MESHLM_ON_CUDA(op, (kForward ? kernels::cuda::rope_forward : kernels::cuda::rope_backward)(
                           rows, ld, p, N, r.T, r.heads, r.head_dim, r.rope_dim, r.interleaved, f));
}

}  // namespace

void rope_forward(const Tensor& x, const Tensor& pos, const Tensor& inv_freq, const RopeHeads& r) {
    rope<true>("rope_forward", x, pos, inv_freq, r);
}

void rope_backward(const Tensor& dx, const Tensor& pos, const Tensor& inv_freq,
                   const RopeHeads& r) {
    rope<false>("rope_backward", dx, pos, inv_freq, r);
}

}  // namespace meshlm::ops
