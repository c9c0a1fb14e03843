#include "meshlm/train/stop_signal.h"

#include <csignal>

#include "meshlm/core/signal_thread.h"

namespace meshlm {
namespace {

// Fallback when the program did not start the signal thread (library use, tests): an
// asynchronous handler that only records the first signal.
volatile std::sig_atomic_t g_async_signal = 0;
struct sigaction g_old_int, g_old_term;

extern "C" void on_stop_signal(int sig) {
    if (g_async_signal != 0) {
        std::signal(sig, SIG_DFL);
        std::raise(sig);
        return;
    }
    g_async_signal = sig;
}

}  // namespace

StopSignals::StopSignals() {
    if (signal_thread_running()) {
        set_graceful_stop(true);
        return;
    }
    g_async_signal = 0;
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &g_old_int);
    sigaction(SIGTERM, &sa, &g_old_term);
}

StopSignals::~StopSignals() {
    if (signal_thread_running()) {
        set_graceful_stop(false);
        return;
    }
    sigaction(SIGINT, &g_old_int, nullptr);
    sigaction(SIGTERM, &g_old_term, nullptr);
}

bool StopSignals::requested() const {
    return signal() != 0;
}
int StopSignals::signal() const {
    return signal_thread_running() ? stop_signal() : static_cast<int>(g_async_signal);
}

}  // namespace meshlm
