#include "meshlm/core/cpu_load.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace meshlm {

namespace {
std::string read_text(const char* path) {
    std::ifstream in(path);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

// The decimal number at the start of s (after spaces); -1 if none.
long leading_number(std::string_view s) {
    const auto start = s.find_first_not_of(' ');
    if (start == std::string_view::npos) return -1;
    long v = -1;
    const auto [end, ec] = std::from_chars(s.data() + start, s.data() + s.size(), v);
    return ec == std::errc() ? v : -1;
}
}  // namespace

int parse_procs_running(std::string_view proc_stat) {
    constexpr std::string_view key = "procs_running ";
    for (std::size_t at = proc_stat.find(key); at != std::string_view::npos;
         at = proc_stat.find(key, at + 1)) {
        if (at != 0 && proc_stat[at - 1] != '\n') continue;
        const long v = leading_number(proc_stat.substr(at + key.size()));
        return v >= 0 && v < (1L << 30) ? static_cast<int>(v) : -1;
    }
    return -1;
}

int parse_cpu_quota(std::string_view cpu_max) {
    if (cpu_max.starts_with("max")) return 0;
    const long quota = leading_number(cpu_max);
    const auto space = cpu_max.find(' ');
    if (quota <= 0 || space == std::string_view::npos) return 0;
    const long period = leading_number(cpu_max.substr(space));
    if (period <= 0) return 0;
    return static_cast<int>(std::min<long>((quota + period - 1) / period, 1L << 20));
}

int cgroup_cpu_quota() {
    // "0::/some/path" names this process's cgroup v2.
    const std::string self = read_text("/proc/self/cgroup");
    const auto at = self.find("0::");
    if (at == std::string::npos) return 0;
    std::string path = self.substr(at + 3);
    path = path.substr(0, path.find('\n'));
    return parse_cpu_quota(read_text(("/sys/fs/cgroup" + path + "/cpu.max").c_str()));
}

int busy_cpus_elsewhere() {
    int fewest = -1;
    for (int i = 0; i < 5; ++i) {
        if (i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
        const int n = parse_procs_running(read_text("/proc/stat"));
        if (n < 0) return 0;
        fewest = fewest < 0 ? n : std::min(fewest, n);
    }
    return std::max(0, fewest - 1);
}

}  // namespace meshlm
