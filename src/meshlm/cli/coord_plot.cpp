#include "meshlm/cli/coord_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "meshlm/cli/plot_canvas.h"

namespace meshlm {
namespace {

constexpr double kPanelW = 260, kPanelH = 200, kMargin = 46, kTitleH = 40;
constexpr int kColumns = 4;

// One panel at (x0, y0): frame, log-log axes with their end values, a line per step.
void panel(cairo_t* cr, double x0, double y0, const CoordSeries& p, const std::vector<int>& widths,
           const std::vector<int>& steps) {
    double lo = 1e300, hi = 0;
    for (const auto& row : p.value)
        for (double v : row)
            if (v > 0) lo = std::min(lo, v), hi = std::max(hi, v);
    if (hi <= 0) lo = 1, hi = 10;
    if (hi / lo < 10) {  // at least a decade, centred
        const double mid = std::sqrt(hi * lo);
        lo = mid / std::sqrt(10.0), hi = mid * std::sqrt(10.0);
    }
    const double px = x0 + kMargin, py = y0 + 24, pw = kPanelW - kMargin - 12,
                 ph = kPanelH - 24 - 30;
    const double wx0 = std::log2(widths.front()), wx1 = std::log2(widths.back());
    auto X = [&](int w) {
        return widths.size() > 1 ? px + pw * (std::log2(w) - wx0) / (wx1 - wx0) : px + pw / 2;
    };
    auto Y = [&](double v) {
        return py + ph * (1 - (std::log(v) - std::log(lo)) / std::log(hi / lo));
    };
    cairo_set_source_rgb(cr, 0, 0, 0);
    cairo_set_line_width(cr, 1);
    cairo_rectangle(cr, px, py, pw, ph);
    cairo_stroke(cr);
    plot_text(cr, x0 + kPanelW / 2, y0 + 16, p.site, 13, true);
    plot_text(cr, px - 4, py + 9, short_number(hi), 9, false);
    plot_text(cr, px - 4, py + ph, short_number(lo), 9, false);
    for (int w : widths) plot_text(cr, X(w), py + ph + 12, std::to_string(w), 9, true);
    for (std::size_t s = 0; s < p.value.size(); ++s) {
        // Early steps light, late steps dark: the microsoft/mup colour order.
        const double t = p.value.size() > 1 ? double(s) / double(p.value.size() - 1) : 1;
        cairo_set_source_rgb(cr, 0.85 - 0.75 * t, 0.35 + 0.1 * t, 0.9 - 0.55 * t);
        cairo_set_line_width(cr, 1.5);
        bool started = false;
        for (std::size_t i = 0; i < widths.size(); ++i) {
            const double v = p.value[s][i];
            if (!(v > 0)) continue;
            if (started)
                cairo_line_to(cr, X(widths[i]), Y(v));
            else
                cairo_move_to(cr, X(widths[i]), Y(v)), started = true;
        }
        cairo_stroke(cr);
    }
    (void)steps;
}

void draw(cairo_t* cr, double W, double H, const std::string& title, const std::vector<int>& widths,
          const std::vector<int>& steps, const std::vector<CoordSeries>& panels) {
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_rectangle(cr, 0, 0, W, H);
    cairo_fill(cr);
    cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_source_rgb(cr, 0, 0, 0);
    std::string legend = title + "   x: width (log)   y: mean |activation| (log)   lines: steps ";
    legend +=
        std::to_string(steps.front()) + " (light) to " + std::to_string(steps.back()) + " (dark)";
    plot_text(cr, 12, 24, legend, 14, false);
    for (std::size_t i = 0; i < panels.size(); ++i)
        panel(cr, (i % kColumns) * kPanelW, kTitleH + (i / kColumns) * kPanelH, panels[i], widths,
              steps);
}

}  // namespace

void draw_coord_check(const std::string& path_stem, const std::string& title,
                      const std::vector<int>& widths, const std::vector<int>& steps,
                      const std::vector<CoordSeries>& panels) {
    const int rows = static_cast<int>((panels.size() + kColumns - 1) / kColumns);
    const double W = kColumns * kPanelW, H = kTitleH + rows * kPanelH;
    for (const char* ext : {".svg", ".png"})
        write_picture(path_stem + ext, static_cast<int>(W), static_cast<int>(H),
                      [&](cairo_t* cr) { draw(cr, W, H, title, widths, steps, panels); });
}

}  // namespace meshlm
