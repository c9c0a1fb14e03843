// Training diagnostics (log.diag_interval): every interval steps, the RMS of the residual stream
// after each block, the RMS of each tensor's update over the RMS of its weights, and the
// gradient noise scale, into the metrics (metrics.jsonl, TensorBoard). What the step records is
// in diag_sums.h; the steps in between cost nothing.
//
// The gradient noise scale B_simple = tr(Sigma) / |G|^2 (McCandlish et al. 2018, "An Empirical
// Model of Large-Batch Training", appendix A): from the squared norms of mean gradients over a
// small batch (B_small examples) and a big one (B_big),
//   |G|^2 ~ (B_big |g_big|^2 - B_small |g_small|^2) / (B_big - B_small)
//   S     ~ (|g_small|^2 - |g_big|^2) / (1 / B_small - 1 / B_big)
// are unbiased estimates of |G|^2 and tr(Sigma); each is noisy, so their moving averages are
// taken before the ratio, as the paper does. Batch sizes count scored target tokens.
#pragma once

#include <ostream>

#include "meshlm/core/param_layout.h"
#include "meshlm/parallel/comm.h"
#include "meshlm/train/diag_sums.h"
#include "meshlm/train/metrics.h"

namespace meshlm {

class GradientNoiseScale {
  public:
    // `decay`: of the moving averages (bias-corrected as Adam's moments, so the first
    // estimates are not pulled towards 0).
    explicit GradientNoiseScale(double decay = 0.9) : decay_(decay) {}
    struct Estimate {
        double g2, s;          // this sample's estimates of |G|^2 and tr(Sigma)
        double g2_avg, s_avg;  // their moving averages
        double b_simple;       // s_avg / g2_avg
    };
    // Squared norms of the mean gradients over b_small and b_big examples, b_small < b_big.
    Estimate add(double b_small, double sq_small, double b_big, double sq_big);

  private:
    double decay_, g2_ = 0, s_ = 0, weight_ = 0;
};

class Diagnostics {
  public:
    // interval 0: never. `out` hears once why the noise scale is not available, if it is not.
    Diagnostics(int interval, std::ostream& out) : interval_(interval), out_(out) {}
    bool due(long step) const { return interval_ > 0 && step % interval_ == 0; }
    // Collective over `world`: the diagnostics of the step just taken (its sums `d` over
    // `layout`, its global gradient norm before clipping) into m.act_rms, m.update_ratio and
    // m.gns*.
    void add_metrics(const DiagSums& d, const ParamLayout& layout, float grad_norm, Comm& world,
                     StepMetrics& m);

  private:
    int interval_;
    std::ostream& out_;
    GradientNoiseScale gns_;
    bool told_ = false;
};

}  // namespace meshlm
