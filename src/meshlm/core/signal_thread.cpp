#include "meshlm/core/signal_thread.h"

#include <pthread.h>

#include <atomic>
#include <csignal>
#include <thread>

namespace meshlm {
namespace {

std::atomic<bool> g_running{false}, g_graceful{false};
std::atomic<int> g_signal{0};
std::atomic<void (*)(int)> g_fatal_hook{nullptr};

sigset_t stop_set() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    return set;
}

[[noreturn]] void die_by(int sig) {
    // The default action, taken by this thread: unblock here and raise.
    std::signal(sig, SIG_DFL);
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    pthread_sigmask(SIG_UNBLOCK, &one, nullptr);
    std::raise(sig);
    std::_Exit(128 + sig);  // not reached
}

}  // namespace

void start_signal_thread() {
    if (g_running.exchange(true)) return;
    sigset_t set = stop_set();
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    std::thread([set] {
        for (;;) {
            int sig = 0;
            if (sigwait(&set, &sig) != 0) continue;
            if (g_graceful.load() && g_signal.load() == 0) {
                g_signal.store(sig);
                continue;
            }
            if (auto hook = g_fatal_hook.load()) hook(sig);
            die_by(sig);
        }
    }).detach();
}

bool signal_thread_running() {
    return g_running.load();
}

void set_graceful_stop(bool on) {
    g_signal.store(0);
    g_graceful.store(on);
}

int stop_signal() {
    return g_signal.load();
}

void set_fatal_signal_hook(void (*hook)(int sig)) {
    g_fatal_hook.store(hook);
}

}  // namespace meshlm
