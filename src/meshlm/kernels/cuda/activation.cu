// Element-wise activations and their gated forms on the GPU, kernels.h's contract (the math is
// in cpu/activation.cpp's header):
//   gelu_tanh  y = 0.5 x (1 + tanh u), u = sqrt(2/pi) (x + 0.044715 x^3)
//   gelu       y = x Phi(x)                  (Phi: normcdff)
//   relu, sqrelu, silu (y = x sigmoid(x))
//   GLU over h = gate | up: out = act(gate) up; dgate = act'(gate) up dout, dup = act(gate) dout.
// One thread per element (grid-stride); the CPU evaluates exp with its own vector exp, so the
// two agree to a few ulp, not bitwise.
#include "meshlm/kernels/cuda/check.h"
#include "meshlm/kernels/cuda/cuda_kernels.h"
#include "meshlm/kernels/cuda/reduce.cuh"

namespace meshlm::kernels::cuda {

namespace {

constexpr int kThreads = 256;

// tanh u = 1 - 2 / (exp(2u) + 1), the CPU's formula: both lose the same digits to cancellation
// deep in the negative tail, so the backends agree there too.
struct GeluTanh {
    static constexpr float kSqrt2OverPi = 0.7978845608028654f, kCubic = 0.044715f;
    __device__ static float tanh_u(float x) {
        const float u = kSqrt2OverPi * (x + kCubic * x * x * x);
        return 1.f - 2.f / (expf(2.f * u) + 1.f);
    }
    __device__ static float f(float x) { return 0.5f * x * (1.f + tanh_u(x)); }
    __device__ static float df(float x) {
        const float th = tanh_u(x);
        const float du = kSqrt2OverPi * (1.f + 3.f * kCubic * x * x);
        return 0.5f * (1.f + th) + 0.5f * x * (1.f - th * th) * du;
    }
};

struct GeluErf {
    __device__ static float f(float x) { return x * normcdff(x); }
    __device__ static float df(float x) {
        return normcdff(x) + x * 0.39894228040143268f * expf(-0.5f * x * x);
    }
};

struct Relu {
    __device__ static float f(float x) { return fmaxf(x, 0.f); }
    __device__ static float df(float x) { return x > 0.f ? 1.f : 0.f; }
};

struct SqRelu {
    __device__ static float f(float x) {
        const float r = fmaxf(x, 0.f);
        return r * r;
    }
    __device__ static float df(float x) { return 2.f * fmaxf(x, 0.f); }
};

struct Silu {
    __device__ static float sigmoid(float x) { return 1.f / (1.f + expf(-x)); }
    __device__ static float f(float x) { return x * sigmoid(x); }
    __device__ static float df(float x) {
        const float sg = sigmoid(x);
        return sg * (1.f + x * (1.f - sg));
    }
};

template <typename A>
__global__ void act_forward(float* out, const float* x, std::size_t n) {
    for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
         i += std::size_t{gridDim.x} * blockDim.x)
        out[i] = A::f(x[i]);
}

template <typename A>
__global__ void act_backward(float* dx, const float* x, const float* dout, std::size_t n) {
    for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
         i += std::size_t{gridDim.x} * blockDim.x)
        dx[i] = A::df(x[i]) * dout[i];
}

// Element i of out [N, F] is row i / F, column i % F; h's rows are 2F wide.
template <typename A>
__global__ void glu_fwd(float* out, const float* h, std::size_t n, int F) {
    for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
         i += std::size_t{gridDim.x} * blockDim.x) {
        const std::size_t r = i / F, c = i % F, at = r * 2 * F + c;
        out[i] = A::f(h[at]) * h[at + F];
    }
}

template <typename A>
__global__ void glu_bwd(float* dh, const float* h, const float* dout, std::size_t n, int F) {
    for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
         i += std::size_t{gridDim.x} * blockDim.x) {
        const std::size_t r = i / F, c = i % F, at = r * 2 * F + c;
        const float gate = h[at], up = h[at + F], g = dout[i];
        dh[at] = A::df(gate) * up * g;
        dh[at + F] = A::f(gate) * g;
    }
}

// Calls fn(A{}) with the activation's device functions.
template <typename Fn>
void with_act(Act act, Fn&& fn) {
    switch (act) {
        case Act::gelu_tanh:
            return fn(GeluTanh{});
        case Act::gelu:
            return fn(GeluErf{});
        case Act::relu:
            return fn(Relu{});
        case Act::sqrelu:
            return fn(SqRelu{});
        case Act::silu:
            return fn(Silu{});
    }
    MESHLM_CHECK(false, "unknown activation ", static_cast<int>(act));
}

}  // namespace

void activation_forward(Act act, float* out, const float* x, std::size_t n) {
    if (n == 0) return;
    with_act(act, [&](auto a) {
        act_forward<decltype(a)><<<grid_for(n, kThreads), kThreads>>>(out, x, n);
    });
    MESHLM_CUDA_LAUNCHED();
}

void activation_backward(Act act, float* dx, const float* x, const float* dout, std::size_t n) {
    if (n == 0) return;
    with_act(act, [&](auto a) {
        act_backward<decltype(a)><<<grid_for(n, kThreads), kThreads>>>(dx, x, dout, n);
    });
    MESHLM_CUDA_LAUNCHED();
}

void glu_forward(Act act, float* out, const float* h, int N, int F) {
    const std::size_t n = static_cast<std::size_t>(N) * F;
    if (n == 0) return;
    with_act(act, [&](auto a) {
        glu_fwd<decltype(a)><<<grid_for(n, kThreads), kThreads>>>(out, h, n, F);
    });
    MESHLM_CUDA_LAUNCHED();
}

void glu_backward(Act act, float* dh, const float* h, const float* dout, int N, int F) {
    const std::size_t n = static_cast<std::size_t>(N) * F;
    if (n == 0) return;
    with_act(act, [&](auto a) {
        glu_bwd<decltype(a)><<<grid_for(n, kThreads), kThreads>>>(dh, h, dout, n, F);
    });
    MESHLM_CUDA_LAUNCHED();
}

}  // namespace meshlm::kernels::cuda
