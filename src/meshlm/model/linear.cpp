#include "meshlm/model/linear.h"

#include <algorithm>
#include <cstddef>

#include "meshlm/core/error.h"
#include "meshlm/kernels/kernels.h"
#include "meshlm/kernels/ops/gemm.h"
#include "meshlm/kernels/ops/linear.h"

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

void forward16(Device d, Bf16Scratch& s, float* y, const float* x, const std::uint16_t* x16,
               const float* W, const float* b, int N, int I, int O, bool accumulate) {
    const Tensor xb = view(input16(s, x, x16, N, I), {N, I}, d), yv = view(y, {N, O}, d);
    const int chunk = std::min(O, s.max_out);
    for (int o0 = 0; o0 < O; o0 += chunk) {
        const int oc = std::min(chunk, O - o0);
        k::to_bf16(s.w, W + static_cast<std::size_t>(o0) * I, static_cast<std::size_t>(oc) * I);
        ops::gemm(yv.columns(o0, oc), xb, false, view(s.w, {oc, I}, d), true, 1.f,
                  accumulate ? 1.f : 0.f);
    }
    if (b) ops::add_bias(yv, view(b, {O}, d));
}

void backward16(Device d, Bf16Scratch& s, float* dx, float* dW, float* db, const float* dy,
                const float* x, const std::uint16_t* x16, const float* W, int N, int I, int O,
                bool accumulate) {
    if (db) k::bias_backward(db, dy, N, O);
    const Tensor xb = view(input16(s, x, x16, N, I), {N, I}, d);
    const int chunk = std::min(O, s.max_out);
    for (int o0 = 0; o0 < O; o0 += chunk) {
        const int oc = std::min(chunk, O - o0);
        k::to_bf16_rows(s.dy, dy + o0, N, oc, O);
        const Tensor dyb = view(s.dy, {N, oc}, d);
        if (dx) {
            k::to_bf16(s.w, W + static_cast<std::size_t>(o0) * I, static_cast<std::size_t>(oc) * I);
            ops::gemm(view(dx, {N, I}, d), dyb, false, view(s.w, {oc, I}, d), false, 1.f,
                      accumulate || o0 > 0 ? 1.f : 0.f);
        }
        ops::gemm(view(dW + static_cast<std::size_t>(o0) * I, {oc, I}, d), dyb, true, xb, false,
                  1.f, 1.f);
    }
}

}  // namespace

void forward(Device d, float* y, const float* x, const float* W, const float* b, int N, int I,
             int O, bool accumulate, Bf16Scratch* bf16, const std::uint16_t* x16) {
    if (bf16) return forward16(d, *bf16, y, x, x16, W, b, N, I, O, accumulate);
    const Tensor yv = view(y, {N, O}, d), xv = view(x, {N, I}, d), Wv = view(W, {O, I}, d);
    const Tensor bv = view(b, {O}, d);
    if (!accumulate) return ops::linear_forward(yv, xv, Wv, bv);
    ops::gemm(yv, xv, false, Wv, true, 1.f, 1.f);
    if (b) ops::add_bias(yv, bv);
}

void backward(Device d, float* dx, float* dW, float* db, const float* dy, const float* x,
              const float* W, int N, int I, int O, bool accumulate, Bf16Scratch* bf16,
              const std::uint16_t* x16) {
    if (bf16) return backward16(d, *bf16, dx, dW, db, dy, x, x16, W, N, I, O, accumulate);
    const Tensor dxv = view(dx, {N, I}, d), dWv = view(dW, {O, I}, d), dbv = view(db, {O}, d);
    const Tensor dyv = view(dy, {N, O}, d), xv = view(x, {N, I}, d), Wv = view(W, {O, I}, d);
    if (!accumulate) return ops::linear_backward(dxv, dWv, dbv, dyv, xv, Wv);
    ops::linear_backward(Tensor{}, dWv, dbv, dyv, xv, Wv);
    if (dx) ops::gemm(dxv, dyv, false, Wv, false, 1.f, 1.f);
}

}  // namespace linear
}  // namespace meshlm
