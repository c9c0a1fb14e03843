// What the kernel gradient tests share: seeded inputs, the "+=" / "=" output conventions
// (a known pattern to accumulate onto, NaN for outputs that must be written), element-wise
// comparison with a tolerance, and the finite-difference check, each printing its margins.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "meshlm/core/error.h"
#include "meshlm/core/threads.h"
#include "meshlm/kernels/kernels.h"
#include "test_util.h"

namespace meshlm::test {

namespace kn = kernels;

// Every test runs the kernels on 2 threads, so the parallel splits are exercised.
class TwoThreads : public ::testing::Environment {
  public:
    void SetUp() override { set_thread_count(2); }
};
[[maybe_unused]] inline const auto* const kTwoThreads =
    ::testing::AddGlobalTestEnvironment(new TwoThreads);

// ---------------------------------------------------------------------------------------------
// Shared helpers

inline std::vector<float> randn(std::size_t n, unsigned seed, float stddev = 1.f,
                                float mean = 0.f) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(mean, stddev);
    std::vector<float> v(n);
    for (auto& x : v) x = dist(rng);
    return v;
}

inline double dot(const std::vector<float>& a, const std::vector<float>& b) {
    double s = 0;
    for (std::size_t i = 0; i < a.size(); ++i) s += double(a[i]) * b[i];
    return s;
}

// The known nonzero pattern "+=" outputs start from: multiples of 1/8 in [-0.875, 1.125].
inline float pattern_at(std::size_t i) {
    return 0.25f * float(int(i % 9) - 4) + 0.125f;
}

inline std::vector<float> accumulate_pattern(std::size_t n) {
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = pattern_at(i);
    return v;
}

// What a "+=" op added on top of accumulate_pattern.
inline std::vector<double> added(const std::vector<float>& got) {
    std::vector<double> d(got.size());
    for (std::size_t i = 0; i < got.size(); ++i) d[i] = double(got[i]) - pattern_at(i);
    return d;
}

// The starting value of "=" outputs: NaN survives into the comparison if left unwritten.
inline std::vector<float> nan_filled(std::size_t n) {
    return std::vector<float>(n, std::numeric_limits<float>::quiet_NaN());
}

inline std::vector<double> to_double(const std::vector<float>& v) {
    return {v.begin(), v.end()};
}

struct Tolerance {
    double abs, rel;
};

// One line per comparison, so the tolerances can be reviewed against the errors observed.
inline void report(const std::string& what, std::size_t count, double max_err, double max_ratio) {
    std::printf("[ checked  ] %-40s %6zu values  max |err| %.2e  max |err|/allowed %.3f\n",
                what.c_str(), count, max_err, max_ratio);
}

// Compares got[i] with ref[i] for every i: |got - ref| <= tol.abs + tol.rel * |ref| + slack[i]
// (slack: none when empty; else per element, e.g. how far rounding alone moves ref[i]).
inline void expect_close(const std::string& what, const std::vector<float>& got,
                         const std::vector<double>& ref, Tolerance tol,
                         const std::vector<double>& slack = {}) {
    ASSERT_EQ(got.size(), ref.size()) << what;
    ASSERT_TRUE(slack.empty() || slack.size() == ref.size()) << what;
    double max_err = 0, max_ratio = 0;
    int failures = 0;
    for (std::size_t i = 0; i < ref.size(); ++i) {
        const double err = std::fabs(got[i] - ref[i]);
        const double allowed =
            tol.abs + tol.rel * std::fabs(ref[i]) + (slack.empty() ? 0.0 : slack[i]);
        if (!(err <= allowed) && ++failures <= 5)  // also catches NaN
            ADD_FAILURE() << what << "[" << i << "]: got " << got[i] << ", expected " << ref[i];
        max_err = std::max(max_err, err);
        max_ratio = std::max(max_ratio, err / allowed);
    }
    EXPECT_EQ(failures, 0) << what << ": " << failures << " of " << ref.size() << " differ";
    report(what, ref.size(), max_err, max_ratio);
}

// Finite-difference check of `analytic` = dL/dx at the elements `indices` of x (all when empty).
// `objective` re-runs the forward on the current contents of x and returns L; x is perturbed
// in place and restored.
inline void check_gradient(const std::string& what, std::vector<float>& x,
                           const std::vector<double>& analytic,
                           const std::function<double()>& objective, double h, Tolerance tol,
                           std::vector<std::size_t> indices = {}) {
    ASSERT_EQ(x.size(), analytic.size()) << what;
    if (indices.empty())
        for (std::size_t i = 0; i < x.size(); ++i) indices.push_back(i);
    double max_err = 0, max_ratio = 0;
    int failures = 0;
    for (std::size_t i : indices) {
        const float x0 = x[i];
        x[i] = float(x0 + h);
        const double x_plus = x[i], l_plus = objective();
        x[i] = float(x0 - h);
        const double x_minus = x[i], l_minus = objective();
        x[i] = x0;
        const double numeric = (l_plus - l_minus) / (x_plus - x_minus);
        const double err = std::fabs(analytic[i] - numeric);
        const double allowed = tol.abs + tol.rel * std::fabs(numeric);
        if (!(err <= allowed) && ++failures <= 5)  // also catches NaN
            ADD_FAILURE() << what << "[" << i << "]: analytic " << analytic[i] << ", numeric "
                          << numeric;
        max_err = std::max(max_err, err);
        max_ratio = std::max(max_ratio, err / allowed);
    }
    EXPECT_EQ(failures, 0) << what << ": " << failures << " of " << indices.size()
                           << " elements out of tolerance";
    report(what, indices.size(), max_err, max_ratio);
}

// Runs fn, which must throw meshlm::Error with `part` in its message.
inline void expect_error(const std::function<void()>& fn, const std::string& part) {
    try {
        fn();
        ADD_FAILURE() << "no error; expected one containing \"" << part << "\"";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
}

// Step sizes: kLinearStep for inputs an output depends on linearly (exact differences),
// kStep for the others (see kernels_grad_test.cpp's header comment).
inline constexpr double kLinearStep = 0.5;
inline constexpr double kStep = 1e-2;

}  // namespace meshlm::test
