// The check the CUDA training tests share: a run on the GPU against the same run on the CPU.
// Each step's loss to 1e-4 relative and the final weights to 1e-5 mean absolute difference:
// the GPU sums in another order, so a few steps drift about that far, while a wrong kernel
// moves the losses by percents.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace meshlm::test {

// Trained: any record with `losses` (one per step) and `params` (the final weights).
template <class Trained>
void expect_gpu_matches_cpu(const Trained& gpu, const Trained& cpu, const std::string& name,
                            bool print = true) {
    double max_loss = 0, sum_w = 0, max_w = 0;
    ASSERT_EQ(gpu.losses.size(), cpu.losses.size());
    for (std::size_t s = 0; s < cpu.losses.size(); ++s) {
        const double rel = std::fabs(gpu.losses[s] - cpu.losses[s]) / std::fabs(cpu.losses[s]);
        max_loss = std::max(max_loss, rel);
        EXPECT_LE(rel, 1e-4) << "step " << s + 1 << ": gpu " << gpu.losses[s] << " cpu "
                             << cpu.losses[s];
    }
    ASSERT_EQ(gpu.params.size(), cpu.params.size());
    for (std::size_t i = 0; i < cpu.params.size(); ++i) {
        const double d = std::fabs(gpu.params[i] - cpu.params[i]);
        sum_w += d, max_w = std::max(max_w, d);
    }
    const double mean_w = sum_w / static_cast<double>(cpu.params.size());
    EXPECT_LE(mean_w, 1e-5);
    if (print)
        std::printf(
            "[ trained  ] %-50s loss rel diff max %.2e  weights |diff| mean %.2e max %.2e\n",
            name.c_str(), max_loss, mean_w, max_w);
}

}  // namespace meshlm::test
