// The tensor-parallel divisibility rule, in one place: which model widths must divide over the
// parallel.model ranks. In core/ so that the model's layout (model/), the mesh (parallel/) and
// the config checks (cli/) all use this one function.
#pragma once

namespace meshlm {

// Tensor parallelism over `model` ranks splits the attention heads, the key/value heads and the
// MLP width (the vocabulary is padded); throws InvalidInput naming the first that does not
// divide and what would. vq_d_v > 0: Transformer-VQ attention, whose one head is replicated and
// whose value width vq_d_v splits instead.
void check_model_parallel_shapes(int model, int n_head, int n_kv_head, int d_ff, int vq_d_v = 0);

}  // namespace meshlm
