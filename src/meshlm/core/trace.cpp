#include "meshlm/core/trace.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>

namespace meshlm {
namespace {

// One thread's events. The registry owns them, so a thread that ends leaves its events behind.
struct ThreadEvents {
    int tid;
    std::vector<TraceEvent> events;
};

struct Registry {
    std::mutex mu;
    std::vector<std::unique_ptr<ThreadEvents>> threads;
};

Registry& registry() {
    static Registry r;
    return r;
}

thread_local ThreadEvents* this_thread = nullptr;

ThreadEvents& own_events() {
    if (!this_thread) {
        Registry& r = registry();
        std::lock_guard lock(r.mu);
        // Braces, not make_unique's parentheses: clang 14 (the TSan build) has no
        // parenthesized aggregate initialization.
        r.threads.push_back(std::unique_ptr<ThreadEvents>(
            new ThreadEvents{static_cast<int>(r.threads.size()), {}}));
        this_thread = r.threads.back().get();
        this_thread->events.reserve(4096);
    }
    return *this_thread;
}

}  // namespace

namespace trace_detail {

std::int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

void record(const TraceEvent& e) {
    ThreadEvents& t = own_events();
    t.events.push_back(e);
    t.events.back().tid = t.tid;
}

}  // namespace trace_detail

void trace_set_enabled(bool on) {
    if (on) own_events();  // the thread that traces is the first: tid 0 (the trainer's main)
    trace_detail::on.store(on, std::memory_order_relaxed);
}

std::vector<TraceEvent> trace_events() {
    Registry& r = registry();
    std::lock_guard lock(r.mu);
    std::vector<TraceEvent> all;
    for (const auto& t : r.threads) all.insert(all.end(), t->events.begin(), t->events.end());
    return all;
}

void trace_clear() {
    Registry& r = registry();
    std::lock_guard lock(r.mu);
    for (const auto& t : r.threads) t->events.clear();
}

std::string trace_json_events(const std::vector<TraceEvent>& events, int pid) {
    std::string s;
    char line[320];
    std::snprintf(line, sizeof line,
                  "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %d, \"tid\": 0, "
                  "\"args\": {\"name\": \"rank %d\"}}",
                  pid, pid);
    s += line;
    int threads = 0;
    for (const TraceEvent& e : events) threads = std::max(threads, e.tid + 1);
    for (int t = 0; t < threads; ++t) {
        std::snprintf(line, sizeof line,
                      ",\n{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": %d, \"tid\": %d, "
                      "\"args\": {\"name\": \"%s %d\"}}",
                      pid, t, t == 0 ? "main" : "thread", t);
        s += line;
    }
    for (const TraceEvent& e : events) {
        // Microseconds with nanosecond digits: nesting survives the conversion exactly.
        const int n = std::snprintf(
            line, sizeof line,
            ",\n{\"name\": \"%s%s%s\", \"ph\": \"X\", \"ts\": %lld.%03lld, \"dur\": "
            "%lld.%03lld, \"pid\": %d, \"tid\": %d, \"args\": {",
            e.name, e.index >= 0 ? " " : "", e.index >= 0 ? std::to_string(e.index).c_str() : "",
            static_cast<long long>(e.ts_ns / 1000), static_cast<long long>(e.ts_ns % 1000),
            static_cast<long long>(e.dur_ns / 1000), static_cast<long long>(e.dur_ns % 1000), pid,
            e.tid);
        s.append(line, static_cast<std::size_t>(n));
        const char* sep = "";
        if (e.index >= 0) s += "\"index\": " + std::to_string(e.index), sep = ", ";
        if (e.bytes >= 0) s += std::string(sep) + "\"bytes\": " + std::to_string(e.bytes);
        s += "}}";
    }
    return s;
}

}  // namespace meshlm
