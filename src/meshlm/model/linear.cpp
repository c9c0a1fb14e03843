#include "meshlm/model/linear.h"

#include <algorithm>
#include <cstddef>

#include "meshlm/core/error.h"
#include "meshlm/kernels/kernels.h"

namespace meshlm {

Precision parse_precision(const std::string& name) {
    if (name == "fp32") return Precision::fp32;
    if (name == "auto") return kernels::native_bf16() ? Precision::bf16 : Precision::fp32;
    MESHLM_CHECK(name == "bf16", "precision '", name, "': expected fp32, bf16 or auto");
    return Precision::bf16;
}

const char* precision_name(Precision p) {
    return p == Precision::bf16 ? "bf16" : "fp32";
}

namespace linear {
namespace k = kernels;
namespace {

// x in bf16: the caller's copy, or rounded into the scratch.
const std::uint16_t* input16(Bf16Scratch& s, const float* x, const std::uint16_t* x16, int N,
                             int I) {
    if (x16) return x16;
    MESHLM_CHECK(N <= s.rows && I <= s.max_in, "bf16 scratch of ", s.rows, " x ", s.max_in,
                 " is too small for a ", N, " x ", I, " input");
    k::to_bf16(s.x, x, static_cast<std::size_t>(N) * I);
    return s.x;
}

void add_bias(float* y, const float* b, int N, int O) {
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; ++n)
        for (int o = 0; o < O; ++o) y[static_cast<long>(n) * O + o] += b[o];
}

void forward16(Bf16Scratch& s, float* y, const float* x, const std::uint16_t* x16, const float* W,
               const float* b, int N, int I, int O, bool accumulate) {
    const std::uint16_t* xb = input16(s, x, x16, N, I);
    const int chunk = std::min(O, s.max_out);
    for (int o0 = 0; o0 < O; o0 += chunk) {
        const int oc = std::min(chunk, O - o0);
        k::to_bf16(s.w, W + static_cast<std::size_t>(o0) * I, static_cast<std::size_t>(oc) * I);
        k::gemm_bf16(false, true, N, oc, I, 1.f, xb, I, s.w, I, accumulate ? 1.f : 0.f, y + o0, O);
    }
    if (b) add_bias(y, b, N, O);
}

void backward16(Bf16Scratch& s, float* dx, float* dW, float* db, const float* dy, const float* x,
                const std::uint16_t* x16, const float* W, int N, int I, int O, bool accumulate) {
    if (db) k::bias_backward(db, dy, N, O);
    const std::uint16_t* xb = input16(s, x, x16, N, I);
    const int chunk = std::min(O, s.max_out);
    for (int o0 = 0; o0 < O; o0 += chunk) {
        const int oc = std::min(chunk, O - o0);
        k::to_bf16_rows(s.dy, dy + o0, N, oc, O);
        if (dx) {
            k::to_bf16(s.w, W + static_cast<std::size_t>(o0) * I, static_cast<std::size_t>(oc) * I);
            k::gemm_bf16(false, false, N, I, oc, 1.f, s.dy, oc, s.w, I,
                         accumulate || o0 > 0 ? 1.f : 0.f, dx, I);
        }
        k::gemm_bf16(true, false, oc, I, N, 1.f, s.dy, oc, xb, I, 1.f,
                     dW + static_cast<std::size_t>(o0) * I, I);
    }
}

}  // namespace

void forward(float* y, const float* x, const float* W, const float* b, int N, int I, int O,
             bool accumulate, Bf16Scratch* bf16, const std::uint16_t* x16) {
    if (bf16) return forward16(*bf16, y, x, x16, W, b, N, I, O, accumulate);
    if (!accumulate) return k::linear_forward(y, x, W, b, N, I, O);
    k::gemm(false, true, N, O, I, 1.f, x, I, W, I, 1.f, y, O);
    if (b) add_bias(y, b, N, O);
}

void backward(float* dx, float* dW, float* db, const float* dy, const float* x, const float* W,
              int N, int I, int O, bool accumulate, Bf16Scratch* bf16, const std::uint16_t* x16) {
    if (bf16) return backward16(*bf16, dx, dW, db, dy, x, x16, W, N, I, O, accumulate);
    if (!accumulate) return k::linear_backward(dx, dW, db, dy, x, W, N, I, O);
    k::linear_backward(nullptr, dW, db, dy, x, W, N, I, O);
    if (dx) k::gemm(false, false, N, I, O, 1.f, dy, O, W, I, 1.f, dx, I);
}

}  // namespace linear
}  // namespace meshlm
