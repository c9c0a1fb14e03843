// The coordinate check's picture (the microsoft/mup "coord check"): one panel per site, x = width
// and y = mean |activation| on log axes, one line per training step. Drawn once with cairo onto
// an SVG and a PNG surface.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace meshlm {

struct CoordSeries {
    std::string site;  // panel title
    // value[step index][width index]
    std::vector<std::vector<double>> value;
};

// Writes path_stem + ".svg" and + ".png". Throws InvalidInput if a file cannot be written.
void draw_coord_check(const std::string& path_stem, const std::string& title,
                      const std::vector<int>& widths, const std::vector<int>& steps,
                      const std::vector<CoordSeries>& panels);

}  // namespace meshlm
