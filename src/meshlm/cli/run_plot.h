// `meshlm plot`'s picture: one panel per metric, side by side, x = step and y = the metric,
// one line per run in a colour of its own, a legend naming the runs; axes linear or log.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace meshlm {

using Curve = std::vector<std::pair<double, double>>;  // (step, value), by step

struct RunPlot {
    std::vector<std::string> runs;           // legend names
    std::vector<std::string> metrics;        // panel titles
    std::vector<std::vector<Curve>> curves;  // [metric][run]
    int width = 900, height = 500;
    bool log_x = false, log_y = false;  // points at or below 0 are left out of a log axis
};

// Writes the picture to `path` (.svg or .png; plot_canvas.h).
void draw_run_plot(const std::string& path, const RunPlot& plot);

}  // namespace meshlm
