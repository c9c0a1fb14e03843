#include "meshlm/model/t5_bias.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace meshlm {

int t5_bucket(int distance, int num_buckets, int max_distance) {
    const int exact = num_buckets / 2;
    if (distance < exact) return std::max(distance, 0);
    const double eps = std::numeric_limits<float>::epsilon();
    const double scaled = std::log(static_cast<double>(distance) / exact + eps) /
                          std::log(static_cast<double>(max_distance) / exact) *
                          (num_buckets - exact);
    return std::min(num_buckets - 1, exact + static_cast<int>(scaled));
}

T5Bias::T5Bias(const ModelConfig& cfg, int heads, int max_len)
    : heads_(heads),
      buckets_(cfg.t5_buckets),
      len_(max_len),
      bucket_(max_len),
      dist_(static_cast<std::size_t>(heads) * max_len),
      grad_(dist_.size()) {
    for (int d = 0; d < max_len; ++d)
        bucket_[d] = t5_bucket(d, cfg.t5_buckets, cfg.t5_max_distance);
    view_.bias = dist_.data();
    view_.grad = grad_.data();
    view_.ld = max_len;
}

const kernels::DistanceBias& T5Bias::expand(const float* table) {
    for (int h = 0; h < heads_; ++h) {
        const float* row = table + static_cast<std::size_t>(h) * buckets_;
        float* out = dist_.data() + static_cast<std::size_t>(h) * len_;
        for (int d = 0; d < len_; ++d) out[d] = row[bucket_[d]];
    }
    std::fill(grad_.begin(), grad_.end(), 0.f);
    return view_;
}

void T5Bias::fold(float* grad_table) const {
    for (int h = 0; h < heads_; ++h) {
        float* row = grad_table + static_cast<std::size_t>(h) * buckets_;
        const float* g = grad_.data() + static_cast<std::size_t>(h) * len_;
        for (int d = 0; d < len_; ++d) row[bucket_[d]] += g[d];
    }
}

}  // namespace meshlm
