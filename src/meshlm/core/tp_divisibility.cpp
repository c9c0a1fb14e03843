#include "meshlm/core/tp_divisibility.h"

#include "meshlm/core/error.h"

namespace meshlm {
namespace {
void check_divides(int model, int value, const char* what) {
    if (value % model == 0) return;
    const int up = (value / model + 1) * model;
    MESHLM_INVALID(what, " (", value, ") must be divisible by parallel.model (", model,
                   ") for tensor parallelism: use ", up, " or a parallel.model that divides ",
                   value);
}
}  // namespace

void check_model_parallel_shapes(int model, int n_head, int n_kv_head, int d_ff, int vq_d_v) {
    if (model <= 1) return;
    if (vq_d_v > 0) {
        check_divides(model, vq_d_v, "the VQ value width (model.vq.d_v, 0 = 2 x model.d_model)");
    } else {
        check_divides(model, n_head, "model.n_head");
        check_divides(model, n_kv_head, "the key/value heads (model.n_kv_head, 0 = n_head)");
    }
    check_divides(model, d_ff, "the MLP width (model.d_ff, 0 = 4 x model.d_model)");
}

}  // namespace meshlm
