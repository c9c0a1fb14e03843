// The input embedding: token rows of wte plus the token's position, p_n = pos0[b] + t for row
// n = b T + t (pos0 null: every row starts at 0; a row continuing a carried VQ state does not):
//   learned     x[n] = wte[tokens[n]] + wpe[p_n]
//   scaled_sin  x[n] = wte[tokens[n]] + scale sinusoid(p_n)      (seed 001's ScaledSin, Hua et
//               al. 2022: one learned scalar, init 0, over fixed sinusoids with wavelengths up to
//               model.vq.pe_lam; no table end, so any position works)
// Backward: dwpe[p_n] += dx[n];  dscale += sum_n dx[n] . sinusoid(p_n).
// Under tensor parallelism wte is split by vocabulary rows (padded to a multiple of the model
// ranks): each rank looks up the tokens in its range, zeros elsewhere, and the rows are summed
// over the ranks. Backward scatters dx into this rank's wte rows; the position tensors are
// replicated.
// With `bf16` (train.precision: bf16) the forward adds bf16 copies of wte's and the position
// tensors' values, as every other weight is used in bf16 (and ZeRO-3 gathers them so); the
// backward is unchanged: the copies' gradients go to the fp32 masters.
#pragma once

#include <cstdint>
#include <vector>

#include "meshlm/core/model_comm.h"
#include "meshlm/core/tensor.h"
#include "meshlm/kernels/device_buffer.h"
#include "meshlm/model/model_config.h"

namespace meshlm {

struct Embedding {
    int C, v0, Vvalid;  // this rank's vocabulary rows [v0, v0 + Vvalid)
    bool learned, scaled_sin;
    bool bf16 = false;
    Device device = Device::cpu;  // where its views live (the ops dispatch on it)
    float lam;
    // scaled_sin: sinusoid(p) for p < max_seq_len at first, grown when a position needs it;
    // off the CPU the ops read a copy in the device's memory, made again only when it grows
    mutable std::vector<float> table;
    ModelComm* mp;

    Embedding(const ModelConfig& cfg, ModelComm& comm);
    void forward(float* x, const std::int32_t* tokens, const float* wte, const float* wpe,
                 const float* pe_scale, int N, int T, const std::int64_t* pos0 = nullptr) const;
    void backward(float* dwte, float* dwpe, float* dpe_scale, const float* dx,
                  const std::int32_t* tokens, int N, int T,
                  const std::int64_t* pos0 = nullptr) const;

  private:
    mutable std::vector<std::int32_t> pos32_;            // pos0 as the ops' i32 view
    mutable kernels::DeviceBuffer table_dev_, pos_dev_;  // their copies off the CPU
    Tensor positions(const std::int64_t* pos0, int N, int T) const;
    Tensor table_view() const;
};

// This rank's rows of a vocabulary of V split over `model` ranks: [first, first + valid) of a
// block of `rows` (the padded share).
struct VocabShard {
    int first, valid, rows;
};
VocabShard vocab_shard(int V, int model, int rank);

}  // namespace meshlm
