#include "meshlm/model/embedding.h"

#include <algorithm>

#include "meshlm/core/param_layout.h"
#include "meshlm/kernels/vocab_parallel.h"

namespace meshlm {
namespace k = kernels;

VocabShard vocab_shard(int V, int model, int rank) {
    const int rows = static_cast<int>(tp_block_rows(V, model));
    const int first = std::min(V, rank * rows);
    return {first, std::min(V, first + rows) - first, rows};
}

Embedding::Embedding(const ModelConfig& cfg, ModelComm& comm)
    : C(cfg.d_model), learned(cfg.position == "learned"), mp(&comm) {
    const VocabShard s = vocab_shard(cfg.vocab_size, comm.size(), comm.rank());
    v0 = s.first;
    Vvalid = s.valid;
}

void Embedding::forward(float* x, const std::int32_t* tokens, const float* wte, const float* wpe,
                        int N, int T) const {
    k::embedding_forward_vocab_range(x, tokens, wte, v0, Vvalid, N, C);
    mp->sum(x, static_cast<std::size_t>(N) * C);
    if (learned) k::position_embedding_forward(x, wpe, N, T, C);
}

void Embedding::backward(float* dwte, float* dwpe, const float* dx, const std::int32_t* tokens,
                         int N, int T) const {
    k::embedding_backward_vocab_range(dwte, dx, tokens, v0, Vvalid, N, C);
    if (learned) k::position_embedding_backward(dwpe, dx, N, T, C);
}

}  // namespace meshlm
