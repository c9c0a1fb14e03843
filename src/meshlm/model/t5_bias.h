// T5's bucketed relative position bias (model.position t5_bias; seed 003's pe = "t5"): one
// learned bias per head and bucket, shared by every layer, added to the attention scores.
// Causal (bidirectional=false, as the seed): a query at i sees key j at distance d = i - j >= 0;
// distances below num_buckets / 2 have a bucket each, longer ones share logarithmically wider
// buckets up to max_distance, and everything further falls in the last bucket:
//   bucket(d) = d                                                        d < E = num_buckets/2
//             = min(num_buckets - 1, E + floor(log(d / E + eps) / log(max_distance / E)
//                                              * (num_buckets - E)))    otherwise
// (eps = float32's machine epsilon, as the seed). The table t5.rel_bias [H, num_buckets] is
// split by heads under tensor parallelism; the layer sees it resolved per distance,
// dist[h, d] = table[h, bucket(d)] (kernels::DistanceBias), and its gradient folds back:
// dtable[h, b] = sum over d with bucket(d) = b of ddist[h, d]. Both run as ops
// (kernels/ops/distance_bias.h) on the model's device, where the per-distance rows live.
#pragma once

#include "meshlm/kernels/device_buffer.h"
#include "meshlm/kernels/ops/op_params.h"
#include "meshlm/model/model_config.h"

namespace meshlm {

int t5_bucket(int distance, int num_buckets, int max_distance);

class T5Bias {
  public:
    // heads: this rank's rows of the table; max_len: the longest context (distances < it);
    // device: where the table, its gradient and the distance rows live.
    T5Bias(const ModelConfig& cfg, int heads, int max_len, Device device = Device::cpu);

    // Resolves table [heads, num_buckets] into the distance rows (the view's bias) and zeroes
    // their gradient rows; returns the view the attention kernels read and add to.
    const kernels::DistanceBias& expand(const float* table);
    // grad_table [heads, num_buckets] += the gradient gathered per distance since expand(), in
    // increasing distance.
    void fold(float* grad_table) const;
    const kernels::DistanceBias& view() const { return view_; }

  private:
    int heads_, buckets_, len_;
    Device device_;
    kernels::DeviceBuffer bucket_;       // i32 [len_]: the bucket of each distance
    kernels::DeviceBuffer dist_, grad_;  // [heads_, len_]
    kernels::DistanceBias view_;
};

}  // namespace meshlm
