// Graceful stop on SIGINT / SIGTERM (preemptible machines): while a StopSignals lives, the first
// signal only sets a flag that the training loop checks between steps (it then writes a
// checkpoint and returns); a second signal ends the process at once. Uses the signal thread of
// core/signal_thread.h when the program started it, else an asynchronous handler.
#pragma once

namespace meshlm {

class StopSignals {
  public:
    StopSignals();   // installs the handlers
    ~StopSignals();  // restores the previous ones
    StopSignals(const StopSignals&) = delete;
    StopSignals& operator=(const StopSignals&) = delete;

    bool requested() const;
    int signal() const;  // the first signal received, 0 if none
};

}  // namespace meshlm
