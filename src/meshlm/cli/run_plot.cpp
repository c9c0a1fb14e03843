#include "meshlm/cli/run_plot.h"

#include <algorithm>
#include <cmath>

#include "meshlm/cli/plot_canvas.h"

namespace meshlm {
namespace {

constexpr double kLegendH = 34, kLeft = 58, kRight = 14, kTop = 26, kBottom = 40;

// Matplotlib's "tab10": distinct at a glance, and in colour order a reader knows.
constexpr double kColours[][3] = {
    {0.122, 0.467, 0.706}, {1.000, 0.498, 0.055}, {0.173, 0.627, 0.173}, {0.839, 0.153, 0.157},
    {0.580, 0.404, 0.741}, {0.549, 0.337, 0.294}, {0.890, 0.467, 0.761}, {0.498, 0.498, 0.498},
    {0.737, 0.741, 0.133}, {0.090, 0.745, 0.812}};

void set_colour(cairo_t* cr, std::size_t run) {
    const double* c = kColours[run % 10];
    cairo_set_source_rgb(cr, c[0], c[1], c[2]);
}

// The range a panel's axis spans: the values' range, widened when it is a single value.
std::pair<double, double> span(std::vector<double> v, bool log_axis) {
    if (v.empty()) return log_axis ? std::pair{1.0, 10.0} : std::pair{0.0, 1.0};
    auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    double a = *lo, b = *hi;
    if (b > a) return {a, b};
    return log_axis ? std::pair{a / 2, a * 2} : std::pair{a - 0.5 - std::abs(a) / 10, a + 0.5};
}

// A linear or log map of [lo, hi] onto [p0, p1].
struct Axis {
    double lo, hi, p0, p1;
    bool log;
    double operator()(double v) const {
        const double t = log ? std::log(v / lo) / std::log(hi / lo) : (v - lo) / (hi - lo);
        return p0 + (p1 - p0) * t;
    }
};

void panel(cairo_t* cr, double x0, double w, double h, const std::string& metric,
           const std::vector<Curve>& curves, const RunPlot& p) {
    std::vector<double> xs, ys;
    for (const Curve& c : curves)
        for (const auto& [x, y] : c)
            if ((!p.log_x || x > 0) && (!p.log_y || y > 0)) xs.push_back(x), ys.push_back(y);
    const auto [xlo, xhi] = span(xs, p.log_x);
    const auto [ylo, yhi] = span(ys, p.log_y);
    const double left = x0 + kLeft, right = x0 + w - kRight, top = kLegendH + kTop,
                 bottom = h - kBottom;
    const Axis X{xlo, xhi, left, right, p.log_x}, Y{ylo, yhi, bottom, top, p.log_y};
    cairo_set_source_rgb(cr, 0, 0, 0);
    cairo_set_line_width(cr, 1);
    cairo_rectangle(cr, left, top, right - left, bottom - top);
    cairo_stroke(cr);
    plot_text(cr, (left + right) / 2, top - 8, metric + (p.log_y ? " (log)" : ""), 13, true);
    plot_text(cr, (left + right) / 2, h - 8, p.log_x ? "step (log)" : "step", 11, true);
    for (double t : axis_ticks(xlo, xhi, p.log_x)) {
        cairo_move_to(cr, X(t), bottom), cairo_line_to(cr, X(t), bottom + 4);
        plot_text(cr, X(t), bottom + 15, short_number(t), 9, true);
    }
    for (double t : axis_ticks(ylo, yhi, p.log_y)) {
        cairo_move_to(cr, left - 4, Y(t)), cairo_line_to(cr, left, Y(t));
        cairo_set_font_size(cr, 9);
        cairo_text_extents_t e;
        cairo_text_extents(cr, short_number(t).c_str(), &e);
        plot_text(cr, left - 6 - e.x_advance, Y(t) + 3, short_number(t), 9, false);
    }
    cairo_stroke(cr);
    // One path per run: the points it has, in step order; round caps show a single point (a
    // run evaluated once) as a dot.
    cairo_set_line_cap(cr, CAIRO_LINE_CAP_ROUND);
    for (std::size_t r = 0; r < curves.size(); ++r) {
        set_colour(cr, r);
        int points = 0;
        for (const auto& [x, y] : curves[r]) {
            if ((p.log_x && x <= 0) || (p.log_y && y <= 0) || !std::isfinite(y)) continue;
            if (points++ == 0) cairo_move_to(cr, X(x), Y(y));
            cairo_line_to(cr, X(x), Y(y));
        }
        cairo_set_line_width(cr, points == 1 ? 5 : 1.6);
        if (points > 0) cairo_stroke(cr);
    }
    cairo_set_line_cap(cr, CAIRO_LINE_CAP_BUTT);
}

// The runs' names with a filled swatch of their colour each, in a row above the panels.
void legend(cairo_t* cr, const std::vector<std::string>& runs) {
    double x = 14;
    for (std::size_t r = 0; r < runs.size(); ++r) {
        set_colour(cr, r);
        cairo_rectangle(cr, x, 12, 18, 10);
        cairo_fill(cr);
        cairo_set_source_rgb(cr, 0, 0, 0);
        plot_text(cr, x + 24, 22, runs[r], 12, false);
        cairo_text_extents_t e;
        cairo_text_extents(cr, runs[r].c_str(), &e);
        x += 24 + e.x_advance + 22;
    }
}

}  // namespace

void draw_run_plot(const std::string& path, const RunPlot& p) {
    write_picture(path, p.width, p.height, [&](cairo_t* cr) {
        cairo_set_source_rgb(cr, 1, 1, 1);
        cairo_paint(cr);
        cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
        legend(cr, p.runs);
        const double w = static_cast<double>(p.width) / static_cast<double>(p.metrics.size());
        for (std::size_t m = 0; m < p.metrics.size(); ++m)
            panel(cr, w * static_cast<double>(m), w, p.height, p.metrics[m], p.curves[m], p);
    });
}

}  // namespace meshlm
