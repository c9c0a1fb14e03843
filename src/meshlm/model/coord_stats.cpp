#include "meshlm/model/coord_stats.h"

#include "meshlm/kernels/ops/stats.h"

namespace meshlm {

const char* coord_site_name(int site) {
    static const char* names[kCoordSites] = {"ax", "aq", "ak", "av", "aqr", "akr", "as",
                                             "ap", "ao", "ar", "fx", "fh",  "fa",  "fr"};
    return names[site];
}

void CoordStats::add(std::size_t at, const Tensor& x) {
    sum[at] += ops::abs_sum(x);
    count[at] += static_cast<double>(x.numel());
}

std::string CoordStats::name(std::size_t at) const {
    if (at == logits_slot()) return "logits";
    return "h." + std::to_string(at / kCoordSites) + "." + coord_site_name(at % kCoordSites);
}

}  // namespace meshlm
