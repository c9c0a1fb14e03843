// fuzz_replay: the fuzz targets without libFuzzer, for the test suite (ctest fuzz_replay_<target>,
// built by the ordinary g++ build). Runs every input file of the given directories (the seed
// corpus and the regression inputs of crashes found and fixed), then, for --seconds, mutations
// of them (mutate.cpp) drawn from a fixed --seed, so a failure reproduces. A finding (fuzz_util.h
// guard's abort, a crash, an input running over --timeout seconds) stops the run: the input is
// written to fuzz-replay-<target>.crash in the working directory and the exit status is 1.
//   fuzz_replay TARGET [--seconds S] [--seed N] [--timeout T] DIR|FILE...
//   fuzz_replay --list
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "replay.h"

namespace meshlm::fuzz {
namespace {

struct Args {
    const ReplayTarget* target = nullptr;
    double seconds = 2;
    std::uint64_t seed = 1;
    unsigned timeout = 20;
    std::vector<std::string> paths;
};

// The input being run, for the signal handler (written with async-signal-safe calls only).
const std::string* g_current = nullptr;
char g_crash_path[512];

void on_fatal(int sig) {
    const char* what = sig == SIGALRM ? "fuzz_replay: timeout; input written to "
                                      : "fuzz_replay: crash; input written to ";
    if (g_current) {
        const int fd = ::open(g_crash_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            (void)!::write(fd, g_current->data(), g_current->size());
            ::close(fd);
        }
    }
    (void)!::write(2, what, std::strlen(what));
    (void)!::write(2, g_crash_path, std::strlen(g_crash_path));
    (void)!::write(2, "\n", 1);
    ::_exit(1);
}

[[noreturn]] void usage(const char* why) {
    std::fprintf(stderr,
                 "fuzz_replay: %s\nusage: fuzz_replay TARGET [--seconds S] [--seed N] "
                 "[--timeout T] DIR|FILE...\n       fuzz_replay --list\n",
                 why);
    std::exit(2);
}

Args parse_args(int argc, char** argv) {
    if (argc < 2) usage("no target given");
    if (std::strcmp(argv[1], "--list") == 0) {
        for (const auto& t : replay_targets()) std::printf("%s\n", t.name);
        std::exit(0);
    }
    Args a;
    for (const auto& t : replay_targets())
        if (t.name == std::string(argv[1])) a.target = &t;
    if (!a.target) usage((std::string("unknown target '") + argv[1] + "' (see --list)").c_str());
    for (int i = 2; i < argc; ++i) {
        const std::string arg = argv[i];
        const bool has_value = i + 1 < argc;
        if (arg == "--seconds" && has_value)
            a.seconds = std::atof(argv[++i]);
        else if (arg == "--seed" && has_value)
            a.seed = std::strtoull(argv[++i], nullptr, 10);
        else if (arg == "--timeout" && has_value)
            a.timeout = static_cast<unsigned>(std::atoi(argv[++i]));
        else if (arg.starts_with("--"))
            usage(("unknown option " + arg).c_str());
        else
            a.paths.push_back(arg);
    }
    return a;
}

// The files named, and those directly in the directories named (sorted); a missing directory
// holds none (a target without regression inputs).
std::vector<std::string> load_inputs(const std::vector<std::string>& paths) {
    namespace fs = std::filesystem;
    std::vector<fs::path> files;
    for (const auto& p : paths) {
        std::error_code ec;
        if (fs::is_directory(p, ec)) {
            for (const auto& e : fs::directory_iterator(p))
                if (e.is_regular_file()) files.push_back(e.path());
        } else if (fs::is_regular_file(p, ec)) {
            files.emplace_back(p);
        }
    }
    std::sort(files.begin(), files.end());
    std::vector<std::string> inputs;
    for (const auto& f : files) {
        std::ifstream in(f, std::ios::binary);
        std::ostringstream s;
        s << in.rdbuf();
        inputs.push_back(s.str());
    }
    return inputs;
}

void run_one(const Args& a, const std::string& input) {
    g_current = &input;
    ::alarm(a.timeout);
    a.target->run(reinterpret_cast<const std::uint8_t*>(input.data()), input.size());
    ::alarm(0);
}

// Without AddressSanitizer (which reserves terabytes of address space), an allocation the input
// does not justify fails as std::bad_alloc, which fuzz::guard reports, instead of swapping.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)  // clang 14 does not define __SANITIZE_ADDRESS__
#define MESHLM_ASAN 1
#endif
#endif
void limit_memory() {
#if !defined(__SANITIZE_ADDRESS__) && !defined(MESHLM_ASAN)
    const rlimit lim{rlim_t{8} << 30, rlim_t{8} << 30};
    ::setrlimit(RLIMIT_AS, &lim);
#endif
}

}  // namespace
}  // namespace meshlm::fuzz

int main(int argc, char** argv) {
    using namespace meshlm::fuzz;
    const Args a = parse_args(argc, argv);
    std::snprintf(g_crash_path, sizeof g_crash_path, "fuzz-replay-%s.crash", a.target->name);
    for (const int sig : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGALRM})
        ::signal(sig, on_fatal);
    limit_memory();
    const std::vector<std::string> inputs = load_inputs(a.paths);
    if (inputs.empty()) usage("no input files in the paths given");
    for (const auto& in : inputs) run_one(a, in);

    std::size_t largest = 0;
    for (const auto& in : inputs) largest = std::max(largest, in.size());
    std::mt19937_64 rng(a.seed);
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(a.seconds);
    long mutated = 0;
    while (std::chrono::steady_clock::now() < until) {
        std::string s = inputs[rng() % inputs.size()];
        const std::string& other = inputs[rng() % inputs.size()];
        for (int k = 1 + static_cast<int>(rng() % 4); k > 0; --k)
            s = mutate(s, other, rng, largest + 1024);
        run_one(a, s);
        ++mutated;
    }
    std::printf("fuzz_replay %s: %zu inputs, %ld mutations in %.1f s (seed %llu): no finding\n",
                a.target->name, inputs.size(), mutated, a.seconds,
                static_cast<unsigned long long>(a.seed));
    return 0;
}
