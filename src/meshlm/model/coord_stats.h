// The coordinate check's activation statistics (muP, seed 002's `coord_check_l1` sites): sums of
// |x| and element counts at fixed sites of every block, plus the output logits, gathered during
// a training forward when asked for. Sums and counts (not means) so that data- and
// tensor-parallel ranks can add theirs: a replicated site counted on every model rank adds the
// same sum and count each time, which leaves its mean unchanged.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "meshlm/core/tensor.h"

namespace meshlm {

// Per-block sites, in the seed's names: attention input, q, k, v, q and k after rotary,
// scores, probabilities, attention output (before its projection), the attention branch
// (after the model-rank reduce), MLP input, pre-activation, post-activation, MLP branch.
// A parallel block's two branches are reduced together: that sum is reported as fr, ar is empty.
namespace coord_site {
enum : int { ax, aq, ak, av, aqr, akr, as, ap, ao, ar, fx, fh, fa, fr };
}
constexpr int kCoordSites = coord_site::fr + 1;
const char* coord_site_name(int site);

struct CoordStats {
    int n_layer = 0;
    std::vector<double> sum, count;  // [n_layer * kCoordSites + 1]: the last slot is the logits
    void reset(int layers) {
        n_layer = layers;
        sum.assign(static_cast<std::size_t>(layers) * kCoordSites + 1, 0.0);
        count = sum;
    }
    std::size_t slot(int layer, int site) const {
        return static_cast<std::size_t>(layer) * kCoordSites + site;
    }
    std::size_t logits_slot() const { return sum.size() - 1; }
    // Adds sum |x| and the count of x, a [rows, width] view (a column block of wider rows).
    void add(std::size_t at, const Tensor& x);
    // "h.<l>.<site>" / "logits", and the mean there (nullopt-free: 0 when nothing was counted).
    std::string name(std::size_t at) const;
    double mean(std::size_t at) const { return count[at] > 0 ? sum[at] / count[at] : 0.0; }
};

}  // namespace meshlm
