#include "meshlm/model/linear.h"

#include <algorithm>
#include <cstddef>

#include "meshlm/core/error.h"
#include "meshlm/kernels/ops/bf16.h"
#include "meshlm/kernels/ops/bias_backward.h"
#include "meshlm/kernels/ops/gemm.h"
#include "meshlm/kernels/ops/linear.h"
#include "meshlm/kernels/ops/machine.h"

namespace meshlm {

Precision parse_precision(const std::string& name) {
    if (name == "fp32") return Precision::fp32;
    if (name == "auto") return ops::native_bf16() ? Precision::bf16 : Precision::fp32;
    MESHLM_CHECK(name == "bf16", "precision '", name, "': expected fp32, bf16 or auto");
    return Precision::bf16;
}

const char* precision_name(Precision p) {
    return p == Precision::bf16 ? "bf16" : "fp32";
}

namespace linear {
namespace {

// x in bf16: the caller's copy, or rounded into the scratch.
const std::uint16_t* input16(Device d, Bf16Scratch& s, const float* x, const std::uint16_t* x16,
                             int N, int I) {
    if (x16) return x16;
    MESHLM_CHECK(N <= s.rows && I <= s.max_in, "bf16 scratch of ", s.rows, " x ", s.max_in,
                 " is too small for a ", N, " x ", I, " input");
    ops::to_bf16(view(s.x, {N, I}, d), view(x, {N, I}, d));
    return s.x;
}

// Rows [o0, o0 + oc) of W [O, I] in bf16, into the scratch.
void rows16(Device d, Bf16Scratch& s, const float* W, int o0, int oc, int I) {
    ops::to_bf16(view(s.w, {oc, I}, d), view(W + static_cast<std::size_t>(o0) * I, {oc, I}, d));
}

void forward16(Device d, Bf16Scratch& s, float* y, const float* x, const std::uint16_t* x16,
               const float* W, const float* b, int N, int I, int O, bool accumulate) {
    const Tensor xb = view(input16(d, s, x, x16, N, I), {N, I}, d), yv = view(y, {N, O}, d);
    const int chunk = std::min(O, s.max_out);
    for (int o0 = 0; o0 < O; o0 += chunk) {
        const int oc = std::min(chunk, O - o0);
        rows16(d, s, W, o0, oc, I);
        ops::gemm(yv.columns(o0, oc), xb, false, view(s.w, {oc, I}, d), true, 1.f,
                  accumulate ? 1.f : 0.f);
    }
    if (b) ops::add_bias(yv, view(b, {O}, d));
}

void backward16(Device d, Bf16Scratch& s, float* dx, float* dW, float* db, const float* dy,
                const float* x, const std::uint16_t* x16, const float* W, int N, int I, int O,
                bool accumulate) {
    if (db) ops::bias_backward(view(db, {O}, d), view(dy, {N, O}, d));
    const Tensor xb = view(input16(d, s, x, x16, N, I), {N, I}, d);
    const int chunk = std::min(O, s.max_out);
    for (int o0 = 0; o0 < O; o0 += chunk) {
        const int oc = std::min(chunk, O - o0);
        ops::to_bf16_rows(view(s.dy, {N, oc}, d), view(dy, {N, O}, d), o0);
        const Tensor dyb = view(s.dy, {N, oc}, d);
        if (dx) {
            rows16(d, s, W, o0, oc, I);
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

void forward(const LinearKernel* kernel, Device d, float* y, const float* x, const float* W,
             const float* b, int N, int I, int O, bool accumulate, Bf16Scratch* bf16,
             const std::uint16_t* x16) {
    if (kernel) return kernel->forward(y, x, W, b, N, I, O, accumulate);
    forward(d, y, x, W, b, N, I, O, accumulate, bf16, x16);
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
