#include "meshlm/parallel/rank_activity.h"

#include <atomic>

namespace meshlm {
namespace {

// Relaxed: a reader wants a recent value, not an ordering with other memory.
std::atomic<const char*> g_phase{"start-up"}, g_collective{nullptr};
std::atomic<long> g_step{0};

}  // namespace

RankActivity rank_activity() {
    RankActivity a;
    a.phase = g_phase.load(std::memory_order_relaxed);
    a.collective = g_collective.load(std::memory_order_relaxed);
    a.step = g_step.load(std::memory_order_relaxed);
    return a;
}

std::string describe(const RankActivity& a) {
    const std::string phase = a.phase ? a.phase : "start-up";
    std::string out = a.collective ? std::string(a.collective) + " in " + phase : phase;
    if (a.step <= 0) return out;
    // "training step 5"; any other phase names the step it belongs to.
    if (phase == "training step") return out + " " + std::to_string(a.step);
    return out + " (step " + std::to_string(a.step) + ")";
}

void set_activity_step(long step) {
    g_step.store(step, std::memory_order_relaxed);
}

void set_activity_phase(const char* phase) {
    g_phase.store(phase, std::memory_order_relaxed);
}

template <ActivityLabel L>
ActivityScope<L>::ActivityScope(const char* label)
    : previous_((L == ActivityLabel::phase ? g_phase : g_collective)
                    .exchange(label, std::memory_order_relaxed)) {}

template <ActivityLabel L>
ActivityScope<L>::~ActivityScope() {
    (L == ActivityLabel::phase ? g_phase : g_collective)
        .store(previous_, std::memory_order_relaxed);
}

template class ActivityScope<ActivityLabel::phase>;
template class ActivityScope<ActivityLabel::collective>;

}  // namespace meshlm
