// fp32 <-> bf16 conversions over device-tagged views (kernels.h's to_bf16, round_bf16,
// to_bf16_rows, from_bf16, from_bf16_rows, from_bf16_in_place). bf16 views hold the 16 bits
// (DType::bf16). Every backend gives the CPU's bits exactly. Rounding is to nearest, ties to
// even, as integer arithmetic on the fp32 bits with no special case: infinities stay infinite,
// and so do most NaNs, but a NaN whose payload sits in the low half only becomes an infinity,
// and one whose top half is all ones carries out of it (0x7FFF8000 becomes -0, 0xFFFF8000 +0).
// Training stops on a non-finite loss before that matters.
//   to_bf16:     out (bf16) = in (f32) rounded, one shape
//   round_bf16:  out (f32) = in (f32) rounded to bf16 and widened back; out may be in
//   from_bf16:   out (f32) = in (bf16), exact, one shape
//   *_rows:      the same for columns [col0, col0 + cols) of in [rows, ld] into out [rows, cols]
//   from_bf16_in_place: buf (f32 [n]) holds n bf16 values in its first 2n bytes; they become
//                its n floats
#pragma once

#include "meshlm/core/tensor.h"

namespace meshlm::ops {

void to_bf16(const Tensor& out, const Tensor& in);
void round_bf16(const Tensor& out, const Tensor& in);
void from_bf16(const Tensor& out, const Tensor& in);
void to_bf16_rows(const Tensor& out, const Tensor& in, int col0);
void from_bf16_rows(const Tensor& out, const Tensor& in, int col0);
void from_bf16_in_place(const Tensor& buf);

}  // namespace meshlm::ops
