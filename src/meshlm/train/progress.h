// Progress of long work on the console: a live line redrawn in place on a terminal, a plain
// line every `interval` seconds otherwise (logs, pipes), and durations, sizes and counts written
// for people ("1m 05s", "2h 03m", "3.2 MiB", "1.50M").
#pragma once

#include <chrono>
#include <ostream>
#include <string>

namespace meshlm {

// "0.4 s", "42 s", "3m 07s", "2h 03m".
std::string human_duration(double seconds);
// "512.0 B", "3.2 MiB".
std::string human_bytes(double bytes);
// "950", "12.3k", "1.50M", "2.00B".
std::string human_count(double n);

class ProgressLine {
  public:
    // `what` heads every line ("final evaluation"); `live`: `out` is a terminal (redraw in
    // place).
    ProgressLine(std::ostream& out, std::string what, bool live, double interval = 10.0);
    // `done` of `total` units of `unit` ("batches") finished.
    void update(long done, long total, const char* unit);
    // Ends a live line (so the next output starts on a fresh line).
    void finish();

  private:
    using Clock = std::chrono::steady_clock;
    std::ostream& out_;
    std::string what_;
    bool tty_;
    double interval_;
    Clock::time_point start_, last_;
    bool drawn_ = false;
};

}  // namespace meshlm
