// The attention ops' shared qkv check (ops/attention_check.h).
#include "meshlm/kernels/ops/attention_check.h"

#include <cstdint>

#include "meshlm/core/error.h"

namespace meshlm::ops {

QkvDims expect_qkv(const char* op, const Tensor& qkv, const Arg& o, const Tensor& alibi_slopes,
                   const AttentionHeads& h) {
    constexpr int kMaxHeadDim = 256;  // both backends' per-row tiles
    const Shape& s = expect_ndim(op, {"qkv", qkv}, 3);
    if (h.H < 1 || h.Hkv < 1 || h.H % h.Hkv != 0)
        throw Error(detail::concat(op, ": H = ", h.H, " query heads need a positive multiple of ",
                                   "Hkv = ", h.Hkv, " key/value heads"));
    const std::int64_t width = h.H + 2 * static_cast<std::int64_t>(h.Hkv);
    if (s[2] % width != 0 || s[2] / width < 1 || s[2] / width > kMaxHeadDim)
        throw Error(detail::concat(op, ": qkv rows of ", s[2], " are not (H + 2 Hkv) D = ", width,
                                   " D with 1 <= D <= ", kMaxHeadDim));
    const QkvDims d{as_int(op, "B", s[0]), as_int(op, "T", s[1]), static_cast<int>(s[2] / width)};
    expect_shape(op, o, Shape{d.B, d.T, static_cast<std::int64_t>(h.H) * d.D});
    if (present(alibi_slopes)) expect_shape(op, {"alibi_slopes", alibi_slopes}, Shape{h.H});
    return d;
}

}  // namespace meshlm::ops
