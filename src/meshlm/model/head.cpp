#include "meshlm/model/head.h"

#include "meshlm/kernels/ops/clip.h"
#include "meshlm/kernels/ops/cross_entropy.h"
#include "meshlm/kernels/ops/vocab_parallel.h"
#include "meshlm/model/embedding.h"
#include "meshlm/model/linear.h"

namespace meshlm {
void scale_logits(Device d, float* logits, std::size_t n, float s) {
    if (s != 1.f) ops::scale(flat(logits, n, d), s);
}

Head::Head(const ModelConfig& cfg, ModelComm& comm)
    : C(cfg.d_model), V(cfg.vocab_size), z_loss(cfg.z_loss), scale(cfg.head_scale()), mp(&comm) {
    const VocabShard s = vocab_shard(V, comm.size(), comm.rank());
    v0 = s.first;
    Vvalid = s.valid;
    Vl = s.rows;
}

void Head::logits(float* logits, const float* x, const float* W, const float* b, int N) const {
    linear::forward(device, logits, x, W, b, N, C, Vl, false, bf16);
    scale_logits(device, logits, static_cast<std::size_t>(N) * Vl, scale);
}

void Head::loss(float* logits, float* losses, float* row_max, float* stats,
                const std::int32_t* targets, int N, float grad_scale) const {
    // d/d(x W^T + b) = s d/dlogits: the cross-entropy writes the scaled gradient directly.
    grad_scale *= scale;
    if (mp->size() == 1)
        return ops::softmax_cross_entropy(view(logits, {N, V}, device), view(losses, {N}, device),
                                          view(targets, {N}, device), grad_scale, z_loss);
    const Device d = device;
    const Tensor x = view(logits, {N, Vl}, d).columns(0, Vvalid), t = view(targets, {N}, d);
    const Tensor mx = view(row_max, {N}, d), st = view(stats, {N, 2}, d);
    ops::ce_row_max(mx, x, t);
    mp->max(row_max, N);
    ops::ce_row_sums(st, x, t, mx, v0, grad_scale != 0.f);
    mp->sum(stats, 2 * static_cast<std::size_t>(N));
    ops::ce_finish(x, view(losses, {N}, d), t, mx, st, v0, grad_scale, z_loss);
}

void Head::backward(float* dx, float* dW, float* db, const float* dlogits, const float* x,
                    const float* W, int N) const {
    linear::backward(device, dx, dW, db, dlogits, x, W, N, C, Vl, false, bf16);
    mp->sum(dx, static_cast<std::size_t>(N) * C);
}

}  // namespace meshlm
