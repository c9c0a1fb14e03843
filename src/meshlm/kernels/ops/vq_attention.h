// Transformer-VQ's pieces over device-tagged views (kernels.h's vq_*; the algorithm, shapes and
// the state a sequence carries are described with VqAttnShape in ops/op_params.h). N = B T rows.
//   vq_attention_forward:  out [N, dv], lse [N] from queries q [N, dk], codes z i32 [N], values
//       v [N, dv], codebook [S, dk], rel [L + 1, dk], u, vb [dk]; state: null or B states
//   vq_attention_backward: dq, dk [N, dk] and dv [N, dv] overwritten; du, dvb [dk], drel
//       [L + 1, dk] accumulated. q, dq and dk share one row stride, as do v and dv (column
//       blocks of the layer's q | k and value | gate rows)
//   vq_quantize:       z [N], err [N] = the nearest codeword of each key k [N, dk] (squared
//                      distance, lowest index on ties)
//   vq_codebook:       codebook = c_sum / max(c_count, 0.01) per code (c_sum [S, dk], c_count [S])
//   vq_commit_grad:    dk += scale (k - codebook[z]) (the commitment loss's gradient)
//   vq_codebook_stats: c_sum[z[n]] += k[n], c_count[z[n]] += 1, in row order
// All f32 but z, on one device. state: host structs on either device (the CUDA kernels stage
// them to the device and the advanced ones back, cuda/cuda_kernels.h).
#pragma once

#include "meshlm/core/tensor.h"
#include "meshlm/kernels/ops/op_params.h"

namespace meshlm::ops {

struct VqTables {
    Tensor codebook, rel, u, vb;
};

void vq_attention_forward(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& z,
                          const Tensor& v, const VqTables& t, int B, int T,
                          const kernels::VqAttnShape& shape, kernels::VqAttnState* state);
struct VqGrads {
    Tensor dq, dk, dv, du, dvb, drel;
};
void vq_attention_backward(const VqGrads& g, const Tensor& dout, const Tensor& out,
                           const Tensor& lse, const Tensor& q, const Tensor& z, const Tensor& v,
                           const VqTables& t, int B, int T, const kernels::VqAttnShape& shape,
                           const kernels::VqAttnState* state);
void vq_quantize(const Tensor& z, const Tensor& err, const Tensor& k, const Tensor& codebook);
void vq_codebook(const Tensor& codebook, const Tensor& c_sum, const Tensor& c_count);
void vq_commit_grad(const Tensor& dk, const Tensor& k, const Tensor& codebook, const Tensor& z,
                    float scale);
void vq_codebook_stats(const Tensor& c_sum, const Tensor& c_count, const Tensor& k,
                       const Tensor& z);

}  // namespace meshlm::ops
