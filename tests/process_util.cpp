#include "process_util.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <regex>
#include <sstream>
#include <thread>

#include "test_util.h"

extern char** environ;

namespace meshlm::test {

namespace fs = std::filesystem;

pid_t spawn_logged(const std::string& cmd, const std::string& log) {
    // exec (not a child shell that forwards nothing): signals must reach the command itself.
    // No stdin: mpirun reads it, and a test run in the background would be stopped (SIGTTIN).
    const std::string full = "exec " + cmd + " < /dev/null > " + log + " 2>&1";
    const char* argv[] = {"/bin/sh", "-c", full.c_str(), nullptr};
    pid_t pid = -1;
    if (posix_spawn(&pid, "/bin/sh", nullptr, nullptr, const_cast<char**>(argv), environ) != 0)
        return -1;
    return pid;
}

bool Child::exited() {
    if (!done && waitpid(pid, &status, WNOHANG) == pid) done = true;
    return done;
}

void Child::kill_and_wait() {
    if (done) return;
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    done = true;
}

std::vector<pid_t> children_of(pid_t parent) {
    std::vector<pid_t> out;
    for (const auto& e : fs::directory_iterator("/proc")) {
        const std::string name = e.path().filename().string();
        if (name.find_first_not_of("0123456789") != std::string::npos) continue;
        const std::string stat = read_file(e.path().string() + "/stat");
        const auto close = stat.rfind(')');
        if (close == std::string::npos) continue;
        std::istringstream rest(stat.substr(close + 2));
        char state;
        pid_t ppid = 0;
        rest >> state >> ppid;
        if (ppid == parent) out.push_back(static_cast<pid_t>(std::stol(name)));
    }
    return out;
}

int mpi_rank_of(pid_t pid) {
    const std::string env = read_file("/proc/" + std::to_string(pid) + "/environ");
    const std::string key = "OMPI_COMM_WORLD_RANK=";
    for (std::size_t at = 0; at < env.size();) {
        const std::size_t end = env.find('\0', at);
        const std::string var = env.substr(at, end == std::string::npos ? end : end - at);
        if (var.rfind(key, 0) == 0) return std::stoi(var.substr(key.size()));
        if (end == std::string::npos) break;
        at = end + 1;
    }
    return -1;
}

bool process_ended(pid_t pid) {
    const std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
    const auto close = stat.rfind(')');
    if (close == std::string::npos || close + 2 >= stat.size()) return true;
    return stat[close + 2] == 'Z' || stat[close + 2] == 'X';
}

bool wait_for(const std::function<bool()>& ready, double seconds) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < deadline) {
        if (ready()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return ready();
}

long latest_checkpoint_step(const std::string& run) {
    const std::string text = read_file(run + "/checkpoints/latest");
    const std::string name = text.substr(0, text.find('\n'));
    return name.rfind("step_", 0) == 0 ? std::stol(name.substr(5)) : 0;
}

long last_step_logged(const std::string& log) {
    static const std::regex re("step +([0-9]+)/[0-9]+ \\| loss");
    const std::string text = read_file(log);
    long last = 0;
    for (std::sregex_iterator it(text.begin(), text.end(), re), end; it != end; ++it)
        last = std::stol((*it)[1]);
    return last;
}

}  // namespace meshlm::test
