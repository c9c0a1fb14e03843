// Activations over device-tagged views (kernels.h's activation_* and glu_*), all f32:
//   activation_forward:  out = act(x)                      (any shape; out the same)
//   activation_backward: dx = act'(x) * dout               (overwrites dx)
//   glu_forward:  h [N, 2F] = gate | up per row, out [N, F] = act(gate) * up
//                 (SwiGLU: Act::silu, GeGLU: Act::gelu)
//   glu_backward: dh [N, 2F] = (act'(gate) up dout | act(gate) dout)   (overwrites dh)
#pragma once

#include "meshlm/core/tensor.h"
#include "meshlm/kernels/ops/op_params.h"

namespace meshlm::ops {

using kernels::Act;

void activation_forward(Act act, const Tensor& out, const Tensor& x);
void activation_backward(Act act, const Tensor& dx, const Tensor& x, const Tensor& dout);
void glu_forward(Act act, const Tensor& out, const Tensor& h);
void glu_backward(Act act, const Tensor& dh, const Tensor& h, const Tensor& dout);

}  // namespace meshlm::ops
