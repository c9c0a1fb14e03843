#include "meshlm/train/nan_policy.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>

#include "meshlm/core/error.h"

namespace meshlm {
namespace {

// The index in layout().slices() of the first slice with a non-finite value in `held`; -1 if none.
std::int64_t first_nonfinite_slice(const ParamLayout& layout, const Learner::Held& held) {
    const auto& slices = layout.slices();
    for (std::size_t i = 0; i < slices.size(); ++i) {
        const std::size_t a = std::max(slices[i].offset, held.begin);
        const std::size_t b = std::min(slices[i].offset + slices[i].numel, held.end);
        for (std::size_t k = a; k < b; ++k)
            if (!std::isfinite(held.data[k - held.begin])) return static_cast<std::int64_t>(i);
    }
    return -1;
}

}  // namespace

NanPolicy parse_nan_policy(const std::string& name) {
    if (name == "halt") return NanPolicy::halt;
    if (name == "skip") return NanPolicy::skip;
    if (name == "rollback") return NanPolicy::rollback;
    MESHLM_INVALID("train.nan_policy must be one of halt, skip, rollback (got '", name, "')");
}

const char* nan_policy_name(NanPolicy p) {
    return p == NanPolicy::halt ? "halt" : p == NanPolicy::skip ? "skip" : "rollback";
}

const char* step_fault_name(StepFault f) {
    return f == StepFault::non_finite ? "non_finite" : f == StepFault::spike ? "spike" : "none";
}

StepGuard::StepGuard(const TrainConfig& tc, Comm& world)
    : world_(world),
      factor_(tc.spike_factor),
      window_(static_cast<std::size_t>(std::max(tc.spike_window, 1))) {}

StepFault StepGuard::check(float loss, float grad_norm) {
    double sum = 0;
    for (double l : recent_) sum += l;
    last_mean_ = recent_.empty() ? 0 : sum / static_cast<double>(recent_.size());
    std::int32_t fault = static_cast<std::int32_t>(StepFault::none);
    if (!std::isfinite(loss) || !std::isfinite(grad_norm))
        fault = static_cast<std::int32_t>(StepFault::non_finite);
    else if (factor_ > 0 && recent_.size() >= window_ && loss > factor_ * last_mean_)
        fault = static_cast<std::int32_t>(StepFault::spike);
    // The loss and the norm are the same on every rank by construction, but a rank's own
    // gradients can hold what the others do not see: the verdict is the worst of all ranks.
    if (world_.size() > 1) world_.all_reduce_max(&fault, 1);
    if (fault == static_cast<std::int32_t>(StepFault::none)) {
        recent_.push_back(loss);
        if (recent_.size() > window_) recent_.pop_front();
    }
    return static_cast<StepFault>(fault);
}

std::string first_nonfinite_site(Comm& world, Learner& learner, float loss) {
    const ParamLayout& layout = learner.layout();
    const std::int64_t n = static_cast<std::int64_t>(layout.slices().size());
    constexpr std::int64_t none = std::numeric_limits<std::int64_t>::max();
    // Parameters first (a cause), then the loss, then gradients: code = kind * n + slice.
    std::int64_t code = none;
    if (const auto p = first_nonfinite_slice(layout, learner.held_params()); p >= 0)
        code = p;
    else if (!std::isfinite(loss))
        code = n;
    else if (const auto g = first_nonfinite_slice(layout, learner.held_grads()); g >= 0)
        code = 2 * n + g;
    if (world.size() > 1) world.all_reduce_min(&code, 1);
    if (code == none) return "none found (the gradient norm overflowed)";
    if (code < n) return "parameter " + layout.slices()[code].name;
    if (code == n) return "the loss (forward pass)";
    return "gradient of " + layout.slices()[code - 2 * n].name;
}

std::string describe_step_fault(StepFault fault, long step, const StepStats& st,
                                const StepGuard& guard, const std::string& site) {
    std::ostringstream os;
    os << "step " << step << ": ";
    if (fault == StepFault::non_finite) {
        os << "non-finite loss " << st.loss << " / gradient norm " << st.grad_norm
           << "; first non-finite tensor: " << site;
    } else {
        os << "loss spike: " << st.loss << " > " << guard.factor() << " x " << guard.mean()
           << ", the mean of the last " << guard.count() << " steps (train.spike_factor)";
    }
    return os.str();
}

}  // namespace meshlm
