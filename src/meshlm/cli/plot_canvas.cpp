#include "meshlm/cli/plot_canvas.h"

#include <cairo-svg.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>

#include "meshlm/core/error.h"

namespace meshlm {

void plot_text(cairo_t* cr, double x, double y, const std::string& s, double size, bool center) {
    cairo_set_font_size(cr, size);
    cairo_text_extents_t e;
    cairo_text_extents(cr, s.c_str(), &e);
    cairo_move_to(cr, center ? x - e.width / 2 - e.x_bearing : x, y);
    cairo_show_text(cr, s.c_str());
}

std::string short_number(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2g", v);
    return buf;
}

std::vector<double> axis_ticks(double lo, double hi, bool log_axis) {
    std::vector<double> t;
    if (!(hi > lo)) return {lo};
    if (log_axis) {
        const bool fine = hi / lo < 100;
        for (double d = std::pow(10, std::floor(std::log10(lo))); d <= hi; d *= 10)
            for (double m : fine ? std::vector<double>{1, 2, 5} : std::vector<double>{1})
                if (m * d >= lo * (1 - 1e-9) && m * d <= hi * (1 + 1e-9)) t.push_back(m * d);
        if (t.size() >= 2) return t;
        t.clear();  // a range inside one 1-2-5 step (losses 3.3 to 5.5): linear ticks
    }
    // About five ticks, at a step of 1, 2 or 5 times a power of ten.
    const double raw = (hi - lo) / 5, p = std::pow(10, std::floor(std::log10(raw)));
    const double step = raw / p < 1.5 ? p : raw / p < 3.5 ? 2 * p : raw / p < 7.5 ? 5 * p : 10 * p;
    for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step)
        t.push_back(std::abs(v) < step * 1e-9 ? 0 : v);
    return t;
}

void write_picture(const std::string& path, int W, int H,
                   const std::function<void(cairo_t*)>& draw) {
    const bool svg = path.size() > 4 && path.compare(path.size() - 4, 4, ".svg") == 0;
    const std::string tmp = path + ".tmp." + std::to_string(::getpid());
    cairo_surface_t* s = svg ? cairo_svg_surface_create(tmp.c_str(), W, H)
                             : cairo_image_surface_create(CAIRO_FORMAT_RGB24, W, H);
    cairo_status_t st = cairo_surface_status(s);
    if (st == CAIRO_STATUS_SUCCESS) {
        cairo_t* cr = cairo_create(s);
        draw(cr);
        cairo_destroy(cr);
        if (!svg) st = cairo_surface_write_to_png(s, tmp.c_str());
        cairo_surface_finish(s);  // writes the rest of an SVG
        if (st == CAIRO_STATUS_SUCCESS) st = cairo_surface_status(s);
    }
    cairo_surface_destroy(s);
    std::error_code ec;
    if (st != CAIRO_STATUS_SUCCESS) {
        std::filesystem::remove(tmp, ec);
        MESHLM_INVALID("cannot write ", path, ": ", cairo_status_to_string(st));
    }
    std::filesystem::rename(tmp, path, ec);
    if (ec) MESHLM_INVALID("cannot write ", path, ": ", ec.message());
}

}  // namespace meshlm
