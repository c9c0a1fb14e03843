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

// Sets the phase for a scope (the previous one comes back after it).
class ActivityPhase {
  public:
    explicit ActivityPhase(const char* phase);
    ~ActivityPhase();
    ActivityPhase(const ActivityPhase&) = delete;
    ActivityPhase& operator=(const ActivityPhase&) = delete;

  private:
    const char* previous_;
};

// Marks this rank blocked in a collective for a scope.
class ActivityCollective {
  public:
    explicit ActivityCollective(const char* collective);
    ~ActivityCollective();
    ActivityCollective(const ActivityCollective&) = delete;
    ActivityCollective& operator=(const ActivityCollective&) = delete;

  private:
    const char* previous_;
};

}  // namespace meshlm
