// Causal attention with a nonlinearity other than softmax on the GPU, kernels.h's
// attention_act_forward / _backward (cpu/attention_act.cpp has the math):
//   s_ij = scale q_i.k_j - slope (i - j) (j <= i),  a = act(s),  p_ij = a_ij inv_i,
//   inv_i = 1 / t_norm, or 1 / (eps + z_i), z_i = sum_j a_ij (norm_*);  out_i = sum_j p_ij v_j
//   backward: dp_ij = dout_i.v_j, da = (dp_ij - c_i) inv_i (norm_*; c_i = sum_j dp_ij p_ij) or
//   dp_ij inv_i, ds = scale a'(s) da;  dq_i = sum_j ds k_j, dk_j = sum_i ds q_i, dv_j = sum_i p v.
// Without softmax's running max no rescaling is needed. One block per query row (forward; the
// backward's dq, which also saves inv_i and c_i) or per key row (dk, dv over the group's query
// heads). A warp scores one key (query) at a time, a shuffle tree sums the head dim, and thread
// d accumulates dim d in key (query) order: no atomics, every run the same bits.
#include <cmath>

#include "meshlm/kernels/cuda/check.h"
#include "meshlm/kernels/cuda/cuda_kernels.h"
#include "meshlm/kernels/cuda/reduce.cuh"

namespace meshlm::kernels::cuda {

namespace {

constexpr int kThreads = 128, kWarps = kThreads / 32, kTile = kThreads;
constexpr int kDims = kMaxAttentionHeadDim / kThreads;  // dims per thread

struct Geo {
    const float* qkv;
    int T, H, Hkv, D, W, G;  // W = (H + 2 Hkv) D, G = H / Hkv
    float scale, t_norm, eps;
    const float* alibi;
    bool sq, norm;
    __device__ std::size_t row(int b, int i) const {
        return (static_cast<std::size_t>(b) * T + i) * W;
    }
    __device__ const float* q(int b, int i, int h) const { return qkv + row(b, i) + h * D; }
    __device__ const float* k(int b, int j, int g) const { return qkv + row(b, j) + (H + g) * D; }
    __device__ const float* v(int b, int j, int g) const {
        return qkv + row(b, j) + (H + Hkv + g) * D;
    }
    __device__ float score(float dot, int h, int i, int j) const {
        return scale * dot - (alibi ? alibi[h] : 0.f) * static_cast<float>(i - j);
    }
    __device__ float act(float s) const {
        if (sq) return s > 0.f ? s * s : 0.f;
        return s > 0.f ? s + 1.f : expf(s);
    }
    __device__ float act_grad(float s) const {
        if (sq) return s > 0.f ? 2.f * s : 0.f;
        return s > 0.f ? 1.f : expf(s);
    }
};

// The warp's dot product of x and y over D dims (every lane gets it).
__device__ float warp_dot(const float* x, const float* y, int D) {
    float s = 0.f;
    for (int d = threadIdx.x % 32; d < D; d += 32) s += x[d] * y[d];
    return warp_reduce(s, SumOp{});
}

__device__ void load(float* dst, const float* src, int D) {
    for (int d = threadIdx.x; d < D; d += kThreads) dst[d] = src[d];
}

// out_i for the block's (b, h, i): the sums of a and a v over keys 0..i, then scaled by inv_i.
__global__ void __launch_bounds__(kThreads) act_forward_kernel(float* out, Geo g) {
    __shared__ float qs[kMaxAttentionHeadDim], a[kTile];
    const int i = blockIdx.x % g.T, h = blockIdx.x / g.T % g.H, b = blockIdx.x / g.T / g.H;
    const int kv = h / g.G, tid = threadIdx.x;
    load(qs, g.q(b, i, h), g.D);
    __syncthreads();
    float acc[kDims] = {}, z = 0.f;
    for (int j0 = 0; j0 <= i; j0 += kTile) {
        const int n = min(kTile, i + 1 - j0);
        for (int c = tid / 32; c < n; c += kWarps) {
            const float s = g.score(warp_dot(qs, g.k(b, j0 + c, kv), g.D), h, i, j0 + c);
            if (tid % 32 == 0) a[c] = g.act(s);
        }
        __syncthreads();
        z += block_sum(tid < n ? a[tid] : 0.f);
        for (int k = 0; k < kDims && tid + k * kThreads < g.D; ++k)
            for (int c = 0; c < n; ++c) acc[k] += a[c] * g.v(b, j0 + c, kv)[tid + k * kThreads];
        __syncthreads();  // a[] is rewritten by the next tile
    }
    const float inv = 1.f / (g.norm ? g.eps + z : g.t_norm);
    float* o = out + (static_cast<std::size_t>(b) * g.T + i) * g.H * g.D + h * g.D;
    for (int k = 0; k < kDims && tid + k * kThreads < g.D; ++k)
        o[tid + k * kThreads] = acc[k] * inv;
}

// dq_i for the block's (b, h, i); saves inv_i and c_i ([B, H, T] each) for the key pass.
__global__ void __launch_bounds__(kThreads)
    act_backward_dq_kernel(float* dqkv, float* inv_out, float* c_out, const float* dout, Geo g) {
    __shared__ float qs[kMaxAttentionHeadDim], gs[kMaxAttentionHeadDim], sv[kTile], dpv[kTile];
    const int i = blockIdx.x % g.T, h = blockIdx.x / g.T % g.H, b = blockIdx.x / g.T / g.H;
    const int kv = h / g.G, tid = threadIdx.x;
    load(qs, g.q(b, i, h), g.D);
    load(gs, dout + (static_cast<std::size_t>(b) * g.T + i) * g.H * g.D + h * g.D, g.D);
    __syncthreads();
    float z = 0.f, ca = 0.f;  // sum_j a, sum_j dp a
    for (int pass = 0; pass < 2; ++pass) {
        const float inv = 1.f / (g.norm ? g.eps + z : g.t_norm), c = ca * inv;
        float acc[kDims] = {};
        for (int j0 = 0; j0 <= i; j0 += kTile) {
            const int n = min(kTile, i + 1 - j0);
            for (int r = tid / 32; r < n; r += kWarps) {
                const float s = g.score(warp_dot(qs, g.k(b, j0 + r, kv), g.D), h, i, j0 + r);
                const float dp = warp_dot(gs, g.v(b, j0 + r, kv), g.D);
                if (tid % 32 == 0) sv[r] = s, dpv[r] = dp;
            }
            __syncthreads();
            if (pass == 0) {
                const float av = tid < n ? g.act(sv[tid]) : 0.f;
                z += block_sum(av);
                ca += block_sum(tid < n ? dpv[tid] * av : 0.f);
            } else {
                if (tid < n) {
                    const float da = g.norm ? (dpv[tid] - c) * inv : dpv[tid] * inv;
                    sv[tid] = g.scale * g.act_grad(sv[tid]) * da;  // ds
                }
                __syncthreads();
                for (int k = 0; k < kDims && tid + k * kThreads < g.D; ++k)
                    for (int r = 0; r < n; ++r)
                        acc[k] += sv[r] * g.k(b, j0 + r, kv)[tid + k * kThreads];
            }
            __syncthreads();  // sv[], dpv[] are rewritten by the next tile
        }
        if (pass == 0) continue;
        float* dq = dqkv + g.row(b, i) + h * g.D;
        for (int k = 0; k < kDims && tid + k * kThreads < g.D; ++k) dq[tid + k * kThreads] = acc[k];
        const std::size_t at = (static_cast<std::size_t>(b) * g.H + h) * g.T + i;
        if (tid == 0) inv_out[at] = inv, c_out[at] = c;
    }
}

// dk_j and dv_j for the block's (b, key/value head kv, j): over the group's query heads h and
// queries i >= j, in that order.
__global__ void __launch_bounds__(kThreads)
    act_backward_dkv_kernel(float* dqkv, const float* inv_in, const float* c_in, const float* dout,
                            Geo g) {
    __shared__ float ks[kMaxAttentionHeadDim], vs[kMaxAttentionHeadDim], ds[kTile], pv[kTile];
    const int j = blockIdx.x % g.T, kv = blockIdx.x / g.T % g.Hkv, b = blockIdx.x / g.T / g.Hkv;
    const int tid = threadIdx.x;
    load(ks, g.k(b, j, kv), g.D);
    load(vs, g.v(b, j, kv), g.D);
    __syncthreads();
    float dk[kDims] = {}, dv[kDims] = {};
    const std::size_t ldo = static_cast<std::size_t>(g.H) * g.D;
    for (int h = kv * g.G; h < (kv + 1) * g.G; ++h)
        for (int i0 = j; i0 < g.T; i0 += kTile) {
            const int n = min(kTile, g.T - i0);
            for (int r = tid / 32; r < n; r += kWarps) {
                const int i = i0 + r;
                const float* go = dout + (static_cast<std::size_t>(b) * g.T + i) * ldo + h * g.D;
                const float s = g.score(warp_dot(g.q(b, i, h), ks, g.D), h, i, j);
                const float dp = warp_dot(go, vs, g.D);
                const std::size_t at = (static_cast<std::size_t>(b) * g.H + h) * g.T + i;
                const float inv = inv_in[at];
                const float da = g.norm ? (dp - c_in[at]) * inv : dp * inv;
                if (tid % 32 == 0) ds[r] = g.scale * g.act_grad(s) * da, pv[r] = g.act(s) * inv;
            }
            __syncthreads();
            for (int k = 0; k < kDims && tid + k * kThreads < g.D; ++k) {
                const int d = tid + k * kThreads;
                for (int r = 0; r < n; ++r) {
                    const std::size_t orow = (static_cast<std::size_t>(b) * g.T + i0 + r) * ldo;
                    dk[k] += ds[r] * g.q(b, i0 + r, h)[d];
                    dv[k] += pv[r] * dout[orow + h * g.D + d];
                }
            }
            __syncthreads();
        }
    for (int k = 0; k < kDims && tid + k * kThreads < g.D; ++k) {
        const int d = tid + k * kThreads;
        dqkv[g.row(b, j) + (g.H + kv) * g.D + d] = dk[k];
        dqkv[g.row(b, j) + (g.H + g.Hkv + kv) * g.D + d] = dv[k];
    }
}

Geo make_geo(const float* qkv, int T, int H, int Hkv, int D, const float* alibi,
             const AttnActParams& act, float scale) {
    const bool sq = act.act == AttnAct::sqrelu || act.act == AttnAct::norm_sqrelu;
    const bool norm = act.act == AttnAct::norm_sqrelu || act.act == AttnAct::norm_elu;
    return Geo{qkv,        T,
               H,          Hkv,
               D,          (H + 2 * Hkv) * D,
               H / Hkv,    scale > 0.f ? scale : 1.f / sqrtf(static_cast<float>(D)),
               act.t_norm, act.eps,
               alibi,      sq,
               norm};
}

}  // namespace

void attention_act_forward(float* out, const float* qkv, int B, int T, int H, int Hkv, int D,
                           const float* alibi_slopes, const AttnActParams& act, float scale) {
    const unsigned rows = static_cast<unsigned>(B) * T * H;
    if (rows == 0) return;
    const Geo g = make_geo(qkv, T, H, Hkv, D, alibi_slopes, act, scale);
    act_forward_kernel<<<rows, kThreads>>>(out, g);
    MESHLM_CUDA_LAUNCHED();
}

void attention_act_backward(float* dqkv, const float* dout, const float* qkv, int B, int T, int H,
                            int Hkv, int D, const float* alibi_slopes, const AttnActParams& act,
                            float scale) {
    const unsigned rows = static_cast<unsigned>(B) * T * H;
    if (rows == 0) return;
    const Geo g = make_geo(qkv, T, H, Hkv, D, alibi_slopes, act, scale);
    void* saved = nullptr;  // inv_i and c_i per query row, from the dq pass to the key pass
    MESHLM_CUDA_CHECK(cudaMalloc(&saved, 2 * std::size_t{rows} * sizeof(float)));
    float* inv = static_cast<float*>(saved);
    float* c = inv + rows;
    act_backward_dq_kernel<<<rows, kThreads>>>(dqkv, inv, c, dout, g);
    MESHLM_CUDA_LAUNCHED();
    const unsigned keys = static_cast<unsigned>(B) * T * Hkv;
    act_backward_dkv_kernel<<<keys, kThreads>>>(dqkv, inv, c, dout, g);
    MESHLM_CUDA_LAUNCHED();
    MESHLM_CUDA_CHECK(cudaFree(saved));  // waits for the kernels
}

}  // namespace meshlm::kernels::cuda
