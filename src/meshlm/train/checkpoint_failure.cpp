#include "meshlm/train/checkpoint_failure.h"

#include <sys/statvfs.h>

#include <cstdio>
#include <filesystem>
#include <ostream>
#include <sstream>

#include "meshlm/core/error.h"
#include "meshlm/io/checkpoint.h"

namespace fs = std::filesystem;

namespace meshlm {
namespace {

std::string bytes_text(std::uint64_t b) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = static_cast<double>(b);
    int u = 0;
    while (v >= 1024 && u < 4) v /= 1024, ++u;
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.1f %s (%llu bytes)", v, units[u],
                  static_cast<unsigned long long>(b));
    return buf;
}

// "<cause>; it needs about X; DIR has Y free; the previous checkpoint ... is intact"
std::string failure_text(const std::string& cause, const CheckpointAttempt& a) {
    const std::string root = a.run_dir + "/checkpoints";
    std::ostringstream os;
    os << "the checkpoint of step " << a.step << " could not be written: " << cause
       << "; it needs about " << bytes_text(a.bytes_needed) << " and " << root << " has ";
    if (const auto free = free_bytes(root))
        os << bytes_text(*free) << " free";
    else
        os << "an unknown amount free";
    std::optional<std::string> latest;
    try {
        latest = latest_checkpoint(a.run_dir);
    } catch (const std::exception&) {
    }
    if (latest)
        os << "; " << *latest << " and " << root << "/latest are intact";
    else
        os << "; there is no earlier checkpoint";
    os << " and the partial files were removed";
    return os.str();
}

}  // namespace

std::optional<std::uint64_t> free_bytes(const std::string& path) {
    fs::path p = path;
    std::error_code ec;
    while (!p.empty() && !fs::exists(p, ec)) p = p.parent_path();
    struct statvfs s;
    if (::statvfs(p.empty() ? "." : p.c_str(), &s) != 0) return std::nullopt;
    return static_cast<std::uint64_t>(s.f_bavail) * s.f_frsize;
}

std::uint64_t checkpoint_bytes_estimate(std::size_t params, int slots, std::size_t stat_floats) {
    // Headers, trainer.json and config.yaml: a few KiB per file at these scales.
    constexpr std::uint64_t small_files = 64 * 1024;
    return (static_cast<std::uint64_t>(params) * (1 + slots) + stat_floats) * sizeof(float) +
           small_files;
}

std::optional<std::string> write_checkpoint_or_report(const std::function<std::string()>& write,
                                                      const CheckpointAttempt& attempt,
                                                      std::ostream& out) {
    try {
        return write();
    } catch (const std::exception& e) {
        const std::string text = failure_text(e.what(), attempt);
        if (attempt.must || attempt.on_error != "continue")
            throw Error(text + (attempt.must ? ""
                                             : " (checkpoint.on_error=stop; continue "
                                               "trains on and retries at the next one)"));
        out << "warning: " << text << "; training continues (checkpoint.on_error=continue)";
        if (attempt.next_step > 0) out << " and tries again at step " << attempt.next_step;
        out << "\n";
        out.flush();
        return std::nullopt;
    }
}

}  // namespace meshlm
