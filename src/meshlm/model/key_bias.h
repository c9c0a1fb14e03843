// The attention key bias (the middle third of every attn.c_attn.bias) has an identically zero
// gradient: adding b to every key adds q.b to a whole row of attention scores, which softmax
// ignores. A backward pass therefore computes only rounding noise for it (~1e-11 next to
// gradients ~1e-2), and AdamW normalizes noise of any size into lr-sized steps, so the key
// biases of runs that round differently (single process, data or tensor parallel) random-walk
// apart -- without changing any output. Zeroing that gradient after backward makes it exact.
#pragma once

#include <cstddef>

#include "meshlm/model/param_layout.h"

namespace meshlm {

// grads[key third of each "*attn.c_attn.bias"] = 0; works on any layout whose c_attn biases
// keep q | k | v thirds (gpt2_layout and the tensor-parallel shards). Returns the largest
// magnitude removed.
float zero_key_bias_grads(const ParamLayout& layout, float* grads);
// The same on the flat range [begin, end) only, `grads` pointing at element `begin` (a ZeRO
// chunk of the gradients).
float zero_key_bias_grads(const ParamLayout& layout, float* grads, std::size_t begin,
                          std::size_t end);

}  // namespace meshlm
