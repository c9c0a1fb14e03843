// What this rank is doing right now, cheap to set from the training loop and the collectives
// and safe to read from another thread: the step, the phase the trainer is in ("training
// step", "checkpoint write", ...) and the collective this rank is blocked in ("all_reduce",
// ...), if any. The peer watch (parallel/peer_watch.h) names them when another rank is lost:
//
//   set_activity_step(step + 1);                      // once per step, before its work
//   { ActivityPhase p("checkpoint write"); ... }      // the trainer, around a phase
//   { ActivityCollective c("all_reduce"); wait...; }  // a Comm backend, around a blocking wait
//
// Labels must be string literals (stored as pointers). Process-wide, like the signal mask.
#pragma once

#include <string>

namespace meshlm {

struct RankActivity {
    const char* phase = nullptr;       // "start-up" until the trainer sets one
    const char* collective = nullptr;  // null when not blocked in a collective
    long step = 0;                     // 0: before the first step
};

RankActivity rank_activity();
// "all_reduce in training step 5", "all_reduce in checkpoint write (step 4)", "start-up".
std::string describe(const RankActivity& a);

void set_activity_step(long step);
void set_activity_phase(const char* phase);

// Sets one of the labels for a scope; the previous value comes back after it.
enum class ActivityLabel { phase, collective };
template <ActivityLabel L>
class ActivityScope {
  public:
    explicit ActivityScope(const char* label);
    ~ActivityScope();
    ActivityScope(const ActivityScope&) = delete;
    ActivityScope& operator=(const ActivityScope&) = delete;

  private:
    const char* previous_;
};
using ActivityPhase = ActivityScope<ActivityLabel::phase>;            // the trainer's phase
using ActivityCollective = ActivityScope<ActivityLabel::collective>;  // blocked in a collective

}  // namespace meshlm
