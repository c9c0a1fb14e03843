// SIGINT / SIGTERM handled by one dedicated thread (sigwait) instead of an asynchronous handler.
//
// Why: an asynchronous handler runs on whichever thread the kernel picks, on top of that thread's
// stack. oneDNN's JIT GEMM kernels keep data below the stack pointer, and a signal frame landing
// there corrupted the heap (seen as "corrupted size vs. prev_size" aborts when Ctrl-C arrived
// mid-GEMM). With the signals blocked in every thread and collected by one waiting thread,
// compute threads are never interrupted.
#pragma once

namespace meshlm {

// Call first thing in main, before any other thread exists (threads inherit the blocked mask).
// Outside a graceful scope a signal ends the process as its default action would.
void start_signal_thread();
bool signal_thread_running();

// Within a graceful scope the first SIGINT / SIGTERM is only recorded (stop_signal() returns
// it); a second one ends the process at once.
void set_graceful_stop(bool on);
int stop_signal();  // 0 if none was recorded

// Called on the signal thread before a signal ends the process (outside a graceful scope, or a
// second one), to let a watcher say first why the job ends (parallel/peer_watch.h: a launcher
// kills the other ranks when one is lost). Returning lets the signal end the process.
void set_fatal_signal_hook(void (*hook)(int sig));  // nullptr: none

}  // namespace meshlm
