#include "meshlm/train/progress.h"

#include <cstdio>

namespace meshlm {

std::string human_bytes(double b) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (b >= 1024 && u < 4) b /= 1024, ++u;
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f %s", b, units[u]);
    return buf;
}

std::string human_count(double n) {
    char buf[32];
    if (n >= 1e9)
        std::snprintf(buf, sizeof buf, "%.2fB", n / 1e9);
    else if (n >= 1e6)
        std::snprintf(buf, sizeof buf, "%.2fM", n / 1e6);
    else if (n >= 1e3)
        std::snprintf(buf, sizeof buf, "%.1fk", n / 1e3);
    else
        std::snprintf(buf, sizeof buf, "%.0f", n);
    return buf;
}

std::string human_duration(double s) {
    char buf[32];
    if (s < 10)
        std::snprintf(buf, sizeof buf, "%.1f s", s);
    else if (s < 60)
        std::snprintf(buf, sizeof buf, "%.0f s", s);
    else if (s < 3600)
        std::snprintf(buf, sizeof buf, "%dm %02ds", static_cast<int>(s) / 60,
                      static_cast<int>(s) % 60);
    else
        std::snprintf(buf, sizeof buf, "%dh %02dm", static_cast<int>(s) / 3600,
                      static_cast<int>(s) % 3600 / 60);
    return buf;
}

ProgressLine::ProgressLine(std::ostream& out, std::string what, bool live, double interval)
    : out_(out),
      what_(std::move(what)),
      tty_(live),
      interval_(interval),
      start_(Clock::now()),
      last_(start_) {}

void ProgressLine::update(long done, long total, const char* unit) {
    const auto now = Clock::now();
    // A terminal redraws a few times a second; a log gets a line every interval.
    const double since = std::chrono::duration<double>(now - last_).count();
    if (since < (tty_ ? 0.25 : interval_) && done < total) return;
    if (!tty_ && done == total && !drawn_) return;  // short work: no line at all
    last_ = now;
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    std::string eta;
    if (done > 0 && done < total)
        eta = ", ETA " + human_duration(elapsed / static_cast<double>(done) *
                                        static_cast<double>(total - done));
    char pct[16];
    std::snprintf(pct, sizeof pct, "%.0f%%",
                  total ? 100.0 * static_cast<double>(done) / static_cast<double>(total) : 100.0);
    out_ << (tty_ ? "\r" : "") << what_ << ": " << done << "/" << total << " " << unit << " ("
         << pct << "), " << human_duration(elapsed) << " elapsed" << eta
         << (tty_ ? "\033[K" : "\n");
    out_.flush();
    drawn_ = true;
}

void ProgressLine::finish() {
    if (tty_ && drawn_) out_ << "\n";
    out_.flush();
    drawn_ = false;
}

}  // namespace meshlm
