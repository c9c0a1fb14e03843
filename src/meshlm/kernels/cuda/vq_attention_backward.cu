// Transformer-VQ's attention on the GPU, backward: cpu/vq_attention.cpp's gradients in passes
// that each write their outputs once (no atomics, so the result is repeatable bit for bit):
//   rows:  a block per query row recomputes its probabilities from lse, dS = P (dP - dO.out),
//          writes dq and keeps P, dS, dq's content and position parts and dPos for the passes
//          below (scratch of N (2 (2L + S) + 2 dk + L + 1) floats);
//   cache: a block per (block of queries, sequence): H = dU / N, dU_s = sum_i P_is dO_i;
//   keys:  a block per own key row t: dk_t, dv_t over the queries of its block and the next
//          that see it, plus H[z_t] of every later block whose cache holds it (the CPU keeps
//          the same sum as a difference of running sums);
//   sums:  a thread per element of du, dvb and drel over the rows, sequence by sequence.
// Carried rows take no gradient, as on the CPU.
#include "meshlm/core/error.h"
#include "meshlm/kernels/cuda/check.h"
#include "meshlm/kernels/cuda/cuda_kernels.h"
#include "meshlm/kernels/cuda/reduce.cuh"
#include "meshlm/kernels/cuda/vq_attention.cuh"

namespace meshlm::kernels::cuda {
namespace vq {
namespace {

// What the row pass leaves for the others, N rows each.
struct Saved {
    float *p, *ds;     // [N][2L + S]: window columns from the block's first key, then the cache
    float *dqu, *dqv;  // [N][dk] dq's content and position parts
    float* dpos;       // [N][L + 1]
    float* h;          // [B][Rmax][S][dv] dU / N of each block of queries
};

__global__ void backward_rows_kernel(Geo g, const float* snaps, Saved sv, float* dq,
                                     const float* dout, const float* out, const float* lse) {
    extern __shared__ float smem[];
    const int cols = g.cols();
    float* p = smem;
    float* ds = smem + cols;
    const std::size_t n = blockIdx.x;
    const Seq s(g, static_cast<int>(n / g.T));
    const std::int64_t ti = s.p0 + static_cast<std::int64_t>(n % g.T), r = ti / g.L;
    const std::int64_t ws = Seq::window_of(r, g.L);
    const int W = static_cast<int>(ti - ws + 1), cache = ws > 0 ? g.S : 0;
    const float* count = s.snap(g, snaps, r);
    const float* mean = count + g.S;
    const float* qrow = g.q + n * g.ldq;
    const float* dO = dout + n * g.dv;
    float delta = 0.f;
    for (int c = threadIdx.x; c < g.dv; c += blockDim.x) delta += dO[c] * out[n * g.dv + c];
    delta = block_sum(delta);
    const float l = lse[n];
    for (int col = threadIdx.x; col < W + cache; col += blockDim.x) {
        const float pc = expf(score(g, s, qrow, ti, ws, W, count, col) - l);
        const float* vrow =
            col < W ? s.value(g, ws + col) : mean + static_cast<std::size_t>(col - W) * g.dv;
        float dp = 0.f;
        for (int c = 0; c < g.dv; ++c) dp += dO[c] * vrow[c];
        p[col] = pc;
        ds[col] = pc * (dp - delta);
        const std::size_t at = n * cols + (col < W ? col : 2 * g.L + (col - W));
        sv.p[at] = p[col];
        sv.ds[at] = ds[col];
    }
    __syncthreads();
    for (int d = threadIdx.x; d < g.dk; d += blockDim.x) {
        float a = 0.f, c = 0.f;
        for (int j = 0; j < W; ++j)
            a += ds[j] * g.codebook[static_cast<std::size_t>(s.code(g, ws + j)) * g.dk + d];
        for (int k = 0; k < cache; ++k)
            a += ds[W + k] * g.codebook[static_cast<std::size_t>(k) * g.dk + d];
        for (int dist = 0; dist <= g.L && dist < W; ++dist)
            c += ds[W - 1 - dist] * g.rel[static_cast<std::size_t>(dist) * g.dk + d];
        dq[n * g.ldq + d] = a + c;
        sv.dqu[n * g.dk + d] = a;
        sv.dqv[n * g.dk + d] = c;
    }
    for (int dist = threadIdx.x; dist <= g.L; dist += blockDim.x)
        sv.dpos[n * (g.L + 1) + dist] = dist < W ? ds[W - 1 - dist] : 0.f;
}

// Grid (Rmax, B): block r's H = dU / N over its queries, when it reads the cache.
__global__ void cache_grads_kernel(Geo g, const float* snaps, Saved sv, const float* dout) {
    const Seq s(g, static_cast<int>(blockIdx.y));
    const std::int64_t r = s.first + blockIdx.x;
    if (r >= s.end || Seq::window_of(r, g.L) == 0) return;
    const float* count = s.snap(g, snaps, r);
    float* hb = sv.h + (static_cast<std::size_t>(s.b) * g.Rmax + (r - s.first)) *
                           static_cast<std::size_t>(g.S) * g.dv;
    const std::size_t cols = g.cols();
    for (std::size_t i = threadIdx.x; i < static_cast<std::size_t>(g.S) * g.dv; i += blockDim.x) {
        const int code = static_cast<int>(i / g.dv), c = static_cast<int>(i % g.dv);
        float a = 0.f;
        for (std::int64_t t = s.qa(r, g.L); t < s.qb(r, g.L); ++t) {
            const std::size_t n = s.row(g, t);
            a += sv.p[n * cols + 2 * g.L + code] * dout[n * g.dv + c];
        }
        hb[i] = a * (count[code] > 0.f ? 1.f / count[code] : 0.f);
    }
}

// A block per own key row: dk and dv of position t (rows of stride ldq, ldv).
__global__ void key_grads_kernel(Geo g, Saved sv, float* dk, float* dv, const float* dout) {
    const std::size_t n = blockIdx.x;
    const Seq s(g, static_cast<int>(n / g.T));
    const std::int64_t t = s.p0 + static_cast<std::int64_t>(n % g.T), rk = t / g.L;
    const std::size_t cols = g.cols();
    const std::int64_t last = rk + 1 < s.end ? rk + 1 : rk;  // its block and the next see it
    for (int d = threadIdx.x; d < g.dk; d += blockDim.x) {
        float a = 0.f;
        for (std::int64_t r = rk; r <= last; ++r) {
            const std::int64_t col = t - Seq::window_of(r, g.L);
            for (std::int64_t tq = t > s.qa(r, g.L) ? t : s.qa(r, g.L); tq < s.qb(r, g.L); ++tq) {
                const std::size_t m = s.row(g, tq);
                a += sv.ds[m * cols + col] * (g.q[m * g.ldq + d] + g.u[d]);
            }
        }
        dk[n * g.ldq + d] = a;
    }
    const int code = s.code(g, t);
    for (int c = threadIdx.x; c < g.dv; c += blockDim.x) {
        float a = 0.f;
        for (std::int64_t r = rk; r <= last; ++r) {
            const std::int64_t col = t - Seq::window_of(r, g.L);
            for (std::int64_t tq = t > s.qa(r, g.L) ? t : s.qa(r, g.L); tq < s.qb(r, g.L); ++tq) {
                const std::size_t m = s.row(g, tq);
                a += sv.p[m * cols + col] * dout[m * g.dv + c];
            }
        }
        for (std::int64_t r = rk + 2; r < s.end; ++r)
            a += sv.h[((static_cast<std::size_t>(s.b) * g.Rmax + (r - s.first)) * g.S + code) *
                          g.dv +
                      c];
        dv[n * g.ldv + c] = a;
    }
}

// du, dvb [dk] and drel [L + 1][dk] += the rows' sums, a sequence's rows summed first.
__global__ void vector_sums_kernel(Geo g, Saved sv, float* du, float* dvb, float* drel) {
    const std::size_t total = static_cast<std::size_t>(g.L + 3) * g.dk;
    for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < total;
         i += std::size_t{gridDim.x} * blockDim.x) {
        const int d = static_cast<int>(i % g.dk), part = static_cast<int>(i / g.dk);
        float* dst = part == 0 ? du + d : part == 1 ? dvb + d : drel + i - 2 * g.dk;
        float acc = *dst;
        for (int b = 0; b < g.B; ++b) {
            float a = 0.f;
            for (int t = 0; t < g.T; ++t) {
                const std::size_t n = static_cast<std::size_t>(b) * g.T + t;
                if (part == 0)
                    a += sv.dqu[n * g.dk + d];
                else if (part == 1)
                    a += sv.dqv[n * g.dk + d];
                else
                    a += sv.dpos[n * (g.L + 1) + (part - 2)] * (g.q[n * g.ldq + d] + g.vb[d]);
            }
            acc += a;
        }
        *dst = acc;
    }
}

}  // namespace
}  // namespace vq

void vq_attention_backward(float* dq, float* dk, float* dv, float* du, float* dvb, float* drel,
                           const float* dout, const float* out, const float* lse, const float* q,
                           int ldq, const std::int32_t* z, const float* v, int ldv,
                           const float* codebook, const float* rel, const float* u, const float* vb,
                           int B, int T, VqAttnShape sh, const VqAttnState* state) {
    using namespace vq;
    if (B < 1 || T < 1) return;
    const StateLayout lay(B, sh);
    DeviceBytes in_bytes = state ? stage_states(state, B, sh) : DeviceBytes(0);
    const StatePtrs in = lay.at(in_bytes.get());
    const Geo g =
        make_geo(q, ldq, z, v, ldv, codebook, rel, u, vb, B, T, sh, state ? &in : nullptr);
    const std::size_t N = static_cast<std::size_t>(B) * T, cols = g.cols();
    const std::size_t nsnap = g.snap_floats() * g.Rmax * B,
                      nh = static_cast<std::size_t>(B) * g.Rmax * sh.S * sh.dv;
    const std::size_t nrows = N * (2 * cols + 2 * static_cast<std::size_t>(sh.dk) + sh.L + 1);
    DeviceBytes scratch(sizeof(float) * (nsnap + nh + nrows));
    float* snaps = static_cast<float*>(scratch.get());
    Saved sv;
    sv.h = snaps + nsnap;
    sv.p = sv.h + nh;
    sv.ds = sv.p + N * cols;
    sv.dqu = sv.ds + N * cols;
    sv.dqv = sv.dqu + N * sh.dk;
    sv.dpos = sv.dqv + N * sh.dk;
    scan_caches(g, snaps, state ? &in : nullptr, nullptr);
    backward_rows_kernel<<<static_cast<unsigned>(N), kThreads, 2 * sizeof(float) * cols>>>(
        g, snaps, sv, dq, dout, out, lse);
    MESHLM_CUDA_LAUNCHED();
    cache_grads_kernel<<<dim3(g.Rmax, B), kThreads>>>(g, snaps, sv, dout);
    MESHLM_CUDA_LAUNCHED();
    key_grads_kernel<<<static_cast<unsigned>(N), kThreads>>>(g, sv, dk, dv, dout);
    MESHLM_CUDA_LAUNCHED();
    const std::size_t sums = static_cast<std::size_t>(sh.L + 3) * sh.dk;
    vector_sums_kernel<<<grid_for(sums, kThreads), kThreads>>>(g, sv, du, dvb, drel);
    MESHLM_CUDA_LAUNCHED();
}

}  // namespace meshlm::kernels::cuda
