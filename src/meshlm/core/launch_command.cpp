#include "meshlm/core/launch_command.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <vector>

namespace meshlm {

namespace {

// A process's argv (/proc/PID/cmdline: NUL-separated); empty when unreadable.
std::vector<std::string> cmdline_of(const std::string& pid) {
    std::ifstream in("/proc/" + pid + "/cmdline", std::ios::binary);
    const std::string raw{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    std::vector<std::string> words;
    std::string word;
    for (char c : raw) {
        if (c != '\0') {
            word += c;
            continue;
        }
        words.push_back(word);
        word.clear();
    }
    return words;
}

std::string parent_of(const std::string& pid) {
    std::ifstream in("/proc/" + pid + "/stat");
    const std::string stat{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    const auto close = stat.rfind(')');  // the name may hold spaces and parentheses
    if (close == std::string::npos) return "";
    std::istringstream rest(stat.substr(close + 2));
    std::string state, ppid;
    rest >> state >> ppid;
    return ppid;
}

bool is_launcher(const std::string& argv0) {
    const std::string name = std::filesystem::path(argv0).filename().string();
    for (const char* l : {"mpirun", "mpiexec", "orterun", "prterun"})
        if (name == l || name.starts_with(std::string(l) + ".")) return true;  // mpirun.openmpi
    return false;
}

// The launcher's words up to the program it started (our argv[0]); empty when none is found.
std::string launcher_from_ancestors() {
    const std::vector<std::string> self = cmdline_of("self");
    if (self.empty()) return "";
    std::string pid = parent_of("self");
    for (int depth = 0; depth < 8 && !pid.empty() && pid != "0" && pid != "1"; ++depth) {
        const std::vector<std::string> argv = cmdline_of(pid);
        if (!argv.empty() && is_launcher(argv[0])) {
            std::string out;
            for (const auto& w : argv) {
                if (w == self[0]) return out;
                out += (out.empty() ? "" : " ") + shell_quote(w);
            }
            return "";  // the program is not on its command line: not ours
        }
        pid = parent_of(pid);
    }
    return "";
}

}  // namespace

std::string self_executable() {
    std::error_code ec;
    const auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
    return ec ? "meshlm" : p.string();
}

std::string shell_quote(const std::string& word) {
    const bool plain = !word.empty() && word.find_first_not_of(
                                            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                            "0123456789_./=:,+@%-") == std::string::npos;
    if (plain) return word;
    std::string out = "'";
    for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

std::string launcher_prefix(int ranks) {
    if (std::string found = launcher_from_ancestors(); !found.empty()) return found;
    if (ranks <= 1) return "";
    return "mpirun" + std::string(::geteuid() == 0 ? " --allow-run-as-root" : "") + " -np " +
           std::to_string(ranks);
}

std::string relaunch_command(int ranks, const std::string& args) {
    const std::string launcher = launcher_prefix(ranks);
    return (launcher.empty() ? "" : launcher + " ") + shell_quote(self_executable()) +
           (args.empty() ? "" : " " + args);
}

}  // namespace meshlm
