#include "meshlm/io/state_tensors.h"

#include <algorithm>

#include "meshlm/core/error.h"

namespace meshlm {

void add_stat_tensors(std::vector<SafetensorsTensor>& out, const std::vector<StateTensor>& tensors,
                      const float* stats) {
    for (const StateTensor& t : tensors)
        out.push_back({t.name, DType::f32, t.shape, stats + t.offset});
}

bool has_factored_stats(const std::vector<StateTensor>& tensors, const std::string& name) {
    return std::any_of(tensors.begin(), tensors.end(),
                       [&](const StateTensor& t) { return t.name == "exp_avg_sq_row." + name; });
}

void read_stat_tensors(const SafetensorsFile& f, const std::vector<StateTensor>& tensors,
                       float* stats) {
    for (const StateTensor& t : tensors) {
        if (!f.has(t.name))
            MESHLM_INVALID(f.path(), ": missing tensor '", t.name,
                           "' (was it written with other optim.adafactor_* factoring settings?)");
        const auto& e = f.entry(t.name);
        if (!(e.shape == t.shape) || e.dtype != DType::f32)
            MESHLM_INVALID(f.path(), ": tensor '", t.name, "' is ", dtype_name(e.dtype), " ",
                           e.shape.str(), "; the optimizer needs f32 ", t.shape.str());
    }
    for (const StateTensor& t : tensors) {
        const auto x = f.f32(t.name);
        std::copy(x.begin(), x.end(), stats + t.offset);
    }
}

}  // namespace meshlm
