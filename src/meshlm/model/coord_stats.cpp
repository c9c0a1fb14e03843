#include "meshlm/model/coord_stats.h"

#include <cmath>

namespace meshlm {

const char* coord_site_name(int site) {
    static const char* names[kCoordSites] = {"ax", "aq", "ak", "av", "aqr", "akr", "as",
                                             "ap", "ao", "ar", "fx", "fh",  "fa",  "fr"};
    return names[site];
}

void CoordStats::add(std::size_t at, const float* x, std::size_t rows, std::size_t width,
                     std::size_t ld) {
    double s = 0;
#pragma omp parallel for reduction(+ : s) schedule(static)
    for (std::size_t r = 0; r < rows; ++r) {
        const float* row = x + r * ld;
        double t = 0;
        for (std::size_t c = 0; c < width; ++c) t += std::fabs(row[c]);
        s += t;
    }
    sum[at] += s;
    count[at] += static_cast<double>(rows * width);
}

std::string CoordStats::name(std::size_t at) const {
    if (at == logits_slot()) return "logits";
    return "h." + std::to_string(at / kCoordSites) + "." + coord_site_name(at % kCoordSites);
}

}  // namespace meshlm
