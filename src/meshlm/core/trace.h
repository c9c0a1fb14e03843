// The trace recorder (log.profile_steps): timed scopes collected per thread while tracing is
// on, written out as Chrome trace "X" (complete) events that Perfetto and chrome://tracing read.
//
//   TraceScope scope("forward block", l);  // "forward block 3", args {"index": 3}
//   TraceScope scope("all_reduce", -1, bytes);  // args {"bytes": ...}
//
// Off (the default), a scope costs one predictable branch on a relaxed atomic load: the
// instrumented sites (model/, parallel/, the trainer) cannot be handed a context without
// threading it through every signature, so the switch is process-wide. Names are string
// literals (kept as pointers, formatted only when written). Each thread appends to its own
// buffer, registered once under a lock, so recording takes no lock.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace meshlm {

struct TraceEvent {
    const char* name;     // a string literal
    std::int64_t index;   // -1: none; else part of the name and args.index
    std::int64_t bytes;   // -1: none; else args.bytes
    std::int64_t ts_ns;   // start, steady clock (CLOCK_MONOTONIC: one clock for every process
    std::int64_t dur_ns;  // of a machine)
    int tid;              // the thread's number in this process, 0 = the first to trace
};

namespace trace_detail {
inline std::atomic<bool> on{false};
std::int64_t now_ns();
void record(const TraceEvent& e);
}  // namespace trace_detail

// Starts (true) or stops recording; scopes open when it changes keep the state they began in.
// The first thread to start it is tid 0.
void trace_set_enabled(bool on);
inline bool trace_enabled() {
    return trace_detail::on.load(std::memory_order_relaxed);
}
// Every event recorded so far, by thread then time; clear() drops them.
std::vector<TraceEvent> trace_events();
void trace_clear();

class TraceScope {
  public:
    explicit TraceScope(const char* name, std::int64_t index = -1, std::int64_t bytes = -1) {
        if (trace_enabled()) [[unlikely]]
            e_ = {name, index, bytes, trace_detail::now_ns(), 0, 0};
    }
    ~TraceScope() {
        if (e_.name) [[unlikely]] {
            e_.dur_ns = trace_detail::now_ns() - e_.ts_ns;
            trace_detail::record(e_);
        }
    }
    TraceScope(const TraceScope&) = delete;
    TraceScope& operator=(const TraceScope&) = delete;

  private:
    TraceEvent e_{};
};

// The events of one process as a Chrome trace's "traceEvents" entries (no brackets), pid =
// `pid`, with metadata naming the process "rank <pid>" and its threads. One event per line.
std::string trace_json_events(const std::vector<TraceEvent>& events, int pid);

}  // namespace meshlm
