#include "meshlm/model/t5_bias.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "meshlm/kernels/ops/distance_bias.h"
#include "meshlm/kernels/ops/elementwise.h"

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

T5Bias::T5Bias(const ModelConfig& cfg, int heads, int max_len, Device device)
    : heads_(heads),
      buckets_(cfg.t5_buckets),
      len_(max_len),
      device_(device),
      bucket_(device, DType::i32, {max_len}),
      dist_(device, DType::f32, {heads, max_len}),
      grad_(device, DType::f32, {heads, max_len}) {
    std::vector<std::int32_t> b(max_len);
    for (int d = 0; d < max_len; ++d) b[d] = t5_bucket(d, cfg.t5_buckets, cfg.t5_max_distance);
    kernels::copy(bucket_.view(), meshlm::view(b.data(), {max_len}, Device::cpu));
    view_.bias = static_cast<const float*>(dist_.data());
    view_.grad = static_cast<float*>(grad_.data());
    view_.ld = max_len;
}

const kernels::DistanceBias& T5Bias::expand(const float* table) {
    ops::distance_bias_expand(dist_.view(), meshlm::view(table, {heads_, buckets_}, device_),
                              bucket_.view());
    ops::fill(grad_.view(), 0.f);
    return view_;
}

void T5Bias::fold(float* grad_table) const {
    ops::distance_bias_fold(meshlm::view(grad_table, {heads_, buckets_}, device_), grad_.view(),
                            bucket_.view());
}

}  // namespace meshlm
