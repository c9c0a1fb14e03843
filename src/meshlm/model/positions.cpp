#include "meshlm/model/positions.h"

#include <cmath>
#include <numbers>

namespace meshlm {

std::vector<float> rope_inv_freq(const ModelConfig& cfg) {
    const int rd = cfg.rotary_dims();
    std::vector<float> f(rd / 2);
    for (int i = 0; i < rd / 2; ++i) {
        double inv = std::pow(static_cast<double>(cfg.rope_base), -2.0 * i / rd);
        if (cfg.rope_scaling == "linear") {
            inv /= cfg.rope_factor;
        } else if (cfg.rope_scaling == "llama3") {
            const double old_len = cfg.rope_original_max_seq;
            const double low_wavelen = old_len / cfg.rope_low_freq_factor;
            const double high_wavelen = old_len / cfg.rope_high_freq_factor;
            const double wavelen = 2 * std::numbers::pi / inv;
            if (wavelen > low_wavelen) {
                inv /= cfg.rope_factor;
            } else if (wavelen >= high_wavelen) {
                const double smooth = (old_len / wavelen - cfg.rope_low_freq_factor) /
                                      (cfg.rope_high_freq_factor - cfg.rope_low_freq_factor);
                inv = (1 - smooth) * inv / cfg.rope_factor + smooth * inv;
            }
        }
        f[i] = static_cast<float>(inv);
    }
    return f;
}

namespace {
std::vector<double> power_of_two_slopes(int n) {
    std::vector<double> s(n);
    const double start = std::pow(2.0, -8.0 / n);
    for (int i = 0; i < n; ++i) s[i] = std::pow(start, i + 1);
    return s;
}
}  // namespace

std::vector<float> alibi_slopes(int n_head) {
    int p = 1;
    while (p * 2 <= n_head) p *= 2;
    std::vector<double> s = power_of_two_slopes(p);
    if (p < n_head) {
        const std::vector<double> extra = power_of_two_slopes(2 * p);
        for (int i = 0; i < n_head - p; ++i) s.push_back(extra[2 * i]);
    }
    return {s.begin(), s.end()};
}

void sinusoid(float* out, std::int64_t p, int C, float lam) {
    const int h = C / 2;
    for (int j = 0; j < h; ++j) {
        const double a = static_cast<double>(p) * std::pow(static_cast<double>(lam), -2.0 * j / C);
        out[j] = static_cast<float>(std::sin(a));
        out[h + j] = static_cast<float>(std::cos(a));
    }
}

std::vector<float> xl_sinusoids(int C, int max_dist, float lam) {
    std::vector<float> t(static_cast<std::size_t>(max_dist + 1) * C);
    for (int d = 0; d <= max_dist; ++d)
        sinusoid(t.data() + static_cast<std::size_t>(d) * C, d, C, lam);
    return t;
}

}  // namespace meshlm
