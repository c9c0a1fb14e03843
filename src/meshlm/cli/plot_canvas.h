// What the pictures of `meshlm coord-check` and `meshlm plot` share: cairo text, numbers and
// axis ticks for people, and drawing one picture into an SVG or PNG file that appears
// complete or not at all.
#pragma once

#include <cairo.h>

#include <functional>
#include <string>
#include <vector>

namespace meshlm {

// `s` at (x, y) (its baseline), centred on x when `center`.
void plot_text(cairo_t* cr, double x, double y, const std::string& s, double size, bool center);
// "0.0012", "3.5", "1.2e+04": %.2g.
std::string short_number(double v);
// Tick values inside [lo, hi]: 1-2-5 steps on a linear axis, powers of ten on a log one (with
// 2 and 5 between them when the range is under two decades, linear ticks where that gives
// fewer than two).
std::vector<double> axis_ticks(double lo, double hi, bool log_axis);

// Draws a W x H picture with `draw` into `path`, an SVG (.svg) or PNG (.png) by its ending,
// through a temporary file renamed into place. Throws InvalidInput if it cannot be written.
void write_picture(const std::string& path, int W, int H,
                   const std::function<void(cairo_t*)>& draw);

}  // namespace meshlm
