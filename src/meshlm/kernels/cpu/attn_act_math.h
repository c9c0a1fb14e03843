// The attention nonlinearities of model.attn_act (kernels.h AttnAct), shared by the training
// kernel (attention_act.cpp) and the decode kernels (attention_decode.cpp).
#pragma once

#include <cmath>

#include "meshlm/kernels/kernels.h"

namespace meshlm::kernels::cpu {

inline bool attn_normalized(AttnAct a) {
    return a == AttnAct::norm_sqrelu || a == AttnAct::norm_elu;
}
inline bool attn_sqrelu(AttnAct a) {
    return a == AttnAct::sqrelu || a == AttnAct::norm_sqrelu;
}
// a(s): relu(s)^2 (sqrelu) or elu(s) + 1.
inline float attn_act_value(bool sqrelu, float s) {
    if (sqrelu) return s > 0.f ? s * s : 0.f;
    return s > 0.f ? s + 1.f : std::exp(s);
}
// a'(s).
inline float attn_act_grad(bool sqrelu, float s) {
    if (sqrelu) return s > 0.f ? 2.f * s : 0.f;
    return s > 0.f ? 1.f : std::exp(s);
}

}  // namespace meshlm::kernels::cpu
