#include "meshlm/train/diagnostics.h"

#include <cmath>
#include <string>
#include <vector>

#include "meshlm/core/error.h"

namespace meshlm {

GradientNoiseScale::Estimate GradientNoiseScale::add(double b_small, double sq_small, double b_big,
                                                     double sq_big) {
    MESHLM_CHECK(b_small > 0 && b_big > b_small, "gradient noise scale: batch sizes ", b_small,
                 " and ", b_big, " are not 0 < small < big");
    Estimate e;
    e.g2 = (b_big * sq_big - b_small * sq_small) / (b_big - b_small);
    e.s = (sq_small - sq_big) / (1 / b_small - 1 / b_big);
    g2_ = decay_ * g2_ + (1 - decay_) * e.g2;
    s_ = decay_ * s_ + (1 - decay_) * e.s;
    weight_ = decay_ * weight_ + (1 - decay_);
    e.g2_avg = g2_ / weight_;
    e.s_avg = s_ / weight_;
    e.b_simple = e.s_avg / e.g2_avg;
    return e;
}

void Diagnostics::add_metrics(const DiagSums& d, const ParamLayout& layout, float grad_norm,
                              Comm& world, StepMetrics& m) {
    // One all-reduce of everything: residual sums and counts, update and weight sums, then the
    // small batches' squared norms (each scaled to a mean gradient), tokens and count.
    std::vector<double> all(d.resid);
    all.insert(all.end(), d.update_sq.begin(), d.update_sq.end());
    all.insert(all.end(), d.weight_sq.begin(), d.weight_sq.end());
    const bool have = d.small != DiagSums::Small::none && d.small_tokens > 0;
    const double k = have ? d.big_tokens / d.small_tokens : 0;
    all.insert(all.end(), {have ? d.grad_sq * k * k : 0, have ? d.small_tokens : 0, have ? 1. : 0});
    if (world.size() > 1) world.all_reduce_sum(all.data(), all.size());

    const std::size_t L = d.resid.size() / 2, S = d.update_sq.size();
    for (std::size_t l = 0; l < L; ++l)
        if (all[L + l] > 0)
            m.act_rms.emplace_back("h." + std::to_string(l), std::sqrt(all[l] / all[L + l]));
    const double* upd = all.data() + 2 * L;
    const double* w = upd + S;
    for (std::size_t i = 0; i < S; ++i)
        if (w[i] > 0)
            m.update_ratio.emplace_back(layout.slices()[i].name, std::sqrt(upd[i] / w[i]));

    const double* small = w + S;  // sum of squared norms, sum of tokens, ranks
    const double big_sq = static_cast<double>(grad_norm) * grad_norm;
    if (small[2] > 0 && d.big_tokens > small[1] / small[2] && std::isfinite(big_sq)) {
        const auto e = gns_.add(small[1] / small[2], small[0] / small[2], d.big_tokens, big_sq);
        m.gns = e.b_simple, m.gns_grad_sq = e.g2_avg, m.gns_noise = e.s_avg;
    } else if (!told_) {
        told_ = true;
        out_ << "note: log.diag_interval: no gradient noise scale, "
             << (d.missing.empty() ? "the step had no smaller batch with scored targets"
                                   : d.missing)
             << "\n";
    }
}

}  // namespace meshlm
