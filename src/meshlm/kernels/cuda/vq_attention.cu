// Transformer-VQ's attention on the GPU, forward (the backward in vq_attention_backward.cu):
// cpu/vq_attention.cpp's math (the formulas are in its header comment), split so that every
// block of queries can run at once:
//   scan:  a CUDA block per sequence walks its blocks in order, folding each L-token chunk into
//          the cache as the CPU's serial reduction does (the same additions in the same order),
//          and writes the cache every block of queries reads (a snapshot: S counts, S x dv
//          means) and, with a state, the state after the call;
//   rows:  a CUDA block per query row: its scores over the window and the cache in shared
//          memory, max and sum as block reductions, lse, then out = P [V; U] a thread per column.
// Both reductions (VqReduction) get the serial one's cache: they differ only in rounding.
// The carried states are host structs (VqAttnState's vectors): a call packs them into one
// device allocation and, in the forward, copies the advanced states back (constant size: at most
// 2L - 1 window rows and the S x dv cache per sequence), an explicit copy each way.
// Scratch is allocated per call (stream-ordered, freed after the kernels).
//
// To make it fast: queries of a block as a tile (the scores a GEMM of [L, dk] x [dk, 2L + S]
// on tensor cores, the codebook and the block's keys in shared memory), the scan's folds as a
// segmented sum per code instead of a thread per column, the states kept on the device across
// calls instead of staged, and one pooled scratch instead of a malloc per call.
#include <cstring>
#include <vector>

#include "meshlm/core/error.h"
#include "meshlm/kernels/cuda/check.h"
#include "meshlm/kernels/cuda/cuda_kernels.h"
#include "meshlm/kernels/cuda/reduce.cuh"
#include "meshlm/kernels/cuda/vq_attention.cuh"

namespace meshlm::kernels::cuda {
namespace vq {
namespace {

// Folds positions [t0, t0 + L) into the live cache (count | mean), with the per-code sums in
// sum / n (zero between folds): a thread per value column walks the chunk in order.
__device__ void fold_chunk(const Geo& g, const Seq& s, std::int64_t t0, float* count, float* mean,
                           float* sum, float* n) {
    const int S = g.S, dv = g.dv;
    for (int c = threadIdx.x; c < dv; c += blockDim.x)
        for (std::int64_t t = t0; t < t0 + g.L; ++t)
            sum[static_cast<std::size_t>(s.code(g, t)) * dv + c] += s.value(g, t)[c];
    if (threadIdx.x == 0)
        for (std::int64_t t = t0; t < t0 + g.L; ++t) n[s.code(g, t)] += 1.f;
    __syncthreads();
    for (std::size_t i = threadIdx.x; i < static_cast<std::size_t>(S) * dv; i += blockDim.x) {
        const int code = static_cast<int>(i / dv);
        if (n[code] == 0.f) continue;
        const float total = count[code] + n[code], keep = count[code] / total, add = 1.f / total;
        mean[i] = mean[i] * keep + sum[i] * add;
        sum[i] = 0.f;
    }
    __syncthreads();
    for (int code = threadIdx.x; code < S; code += blockDim.x)
        if (n[code] != 0.f) count[code] += n[code], n[code] = 0.f;
    __syncthreads();
}

__device__ void copy_floats(float* dst, const float* src, std::size_t n) {
    for (std::size_t i = threadIdx.x; i < n; i += blockDim.x) dst[i] = src[i];
}

// A block per sequence. work: per sequence the live cache (S counts, S x dv means), then the
// fold sums (S x dv) and counts (S). in / out: the packed states (StateLayout), or null.
__global__ void scan_kernel(Geo g, float* snaps, float* work, StatePtrs in, StatePtrs out) {
    const Seq s(g, static_cast<int>(blockIdx.x));
    const std::size_t per = g.snap_floats(), Sdv = static_cast<std::size_t>(g.S) * g.dv;
    float* count = work + static_cast<std::size_t>(s.b) * (2 * per);
    float* mean = count + g.S;
    float* sum = mean + Sdv;
    float* n = sum + Sdv;
    for (std::size_t i = threadIdx.x; i < per; i += blockDim.x) {
        const float* from =
            i < static_cast<std::size_t>(g.S)
                ? (in.count ? in.count + static_cast<std::size_t>(s.b) * g.S : nullptr)
                : (in.mean ? in.mean + s.b * Sdv : nullptr);
        const std::size_t at = i < static_cast<std::size_t>(g.S) ? i : i - g.S;
        count[i] = from ? from[at] : 0.f;  // count | mean are contiguous
        sum[i] = 0.f;                      // sum | n too
    }
    __syncthreads();
    std::int64_t cached = s.base;
    for (std::int64_t r = s.first; r < s.end; ++r) {
        for (; cached < Seq::window_of(r, g.L); cached += g.L)
            fold_chunk(g, s, cached, count, mean, sum, n);
        copy_floats(s.snap(g, snaps, r), count, per);
    }
    if (!out.count) return;
    const std::int64_t ws = window_start(s.stop, g.L);
    for (; cached < ws; cached += g.L) fold_chunk(g, s, cached, count, mean, sum, n);
    copy_floats(out.count + static_cast<std::size_t>(s.b) * g.S, count, g.S);
    copy_floats(out.mean + s.b * Sdv, mean, Sdv);
    const std::size_t held = static_cast<std::size_t>(s.stop - ws);
    for (std::size_t i = threadIdx.x; i < held; i += blockDim.x)
        out.z[static_cast<std::size_t>(s.b) * 2 * g.L + i] =
            s.code(g, ws + static_cast<std::int64_t>(i));
    for (std::size_t i = threadIdx.x; i < held * g.dv; i += blockDim.x)
        out.v[static_cast<std::size_t>(s.b) * 2 * g.L * g.dv + i] =
            s.value(g, ws + static_cast<std::int64_t>(i / g.dv))[i % g.dv];
}

// A block per query row n: out[n] and lse[n].
__global__ void forward_rows_kernel(Geo g, const float* snaps, float* out, float* lse) {
    extern __shared__ float smem[];
    const std::size_t n = blockIdx.x;
    const Seq s(g, static_cast<int>(n / g.T));
    const std::int64_t ti = s.p0 + static_cast<std::int64_t>(n % g.T), r = ti / g.L;
    const std::int64_t ws = Seq::window_of(r, g.L);
    const int W = static_cast<int>(ti - ws + 1), width = W + (ws > 0 ? g.S : 0);
    const float* count = s.snap(g, snaps, r);
    const float* mean = count + g.S;
    const float* qrow = g.q + n * g.ldq;
    float m = -INFINITY;
    for (int col = threadIdx.x; col < width; col += blockDim.x) {
        smem[col] = score(g, s, qrow, ti, ws, W, count, col);
        m = fmaxf(m, smem[col]);
    }
    m = block_max(m);
    float d = 0.f;
    for (int col = threadIdx.x; col < width; col += blockDim.x) d += expf(smem[col] - m);
    d = block_sum(d);
    const float inv = 1.f / d;
    for (int col = threadIdx.x; col < width; col += blockDim.x)
        smem[col] = expf(smem[col] - m) * inv;
    if (threadIdx.x == 0) lse[n] = m + logf(d);
    __syncthreads();
    for (int c = threadIdx.x; c < g.dv; c += blockDim.x) {
        float o = 0.f;
        for (int j = 0; j < W; ++j) o += smem[j] * s.value(g, ws + j)[c];
        for (int k = W; k < width; ++k)
            o += smem[k] * mean[static_cast<std::size_t>(k - W) * g.dv + c];
        out[n * g.dv + c] = o;
    }
}

}  // namespace

StateLayout::StateLayout(int B, VqAttnShape sh) {
    auto take = [this](std::size_t bytes) {
        const std::size_t at = this->bytes;
        this->bytes += (bytes + 15) / 16 * 16;
        return at;
    };
    const std::size_t b = B, L2 = 2 * static_cast<std::size_t>(sh.L);
    pos = take(b * sizeof(std::int64_t));
    z = take(b * L2 * sizeof(std::int32_t));
    v = take(b * L2 * sh.dv * sizeof(float));
    count = take(b * sh.S * sizeof(float));
    mean = take(b * sh.S * static_cast<std::size_t>(sh.dv) * sizeof(float));
}

StatePtrs StateLayout::at(void* base) const {
    char* p = static_cast<char*>(base);
    return {reinterpret_cast<std::int64_t*>(p + pos), reinterpret_cast<std::int32_t*>(p + z),
            reinterpret_cast<float*>(p + v), reinterpret_cast<float*>(p + count),
            reinterpret_cast<float*>(p + mean)};
}

DeviceBytes::DeviceBytes(std::size_t bytes) {
    MESHLM_CUDA_CHECK(cudaMallocAsync(&p_, bytes ? bytes : 1, 0));
}
DeviceBytes::~DeviceBytes() {
    if (p_)
        cudaFreeAsync(p_,
                      0);  // an error here would be from earlier work; a destructor cannot throw
}

// The B host states packed as StateLayout and copied to the device (empty caches as zeros).
DeviceBytes stage_states(const VqAttnState* st, int B, VqAttnShape sh) {
    const StateLayout lay(B, sh);
    std::vector<char> host(lay.bytes, 0);
    const StatePtrs h = lay.at(host.data());
    const std::size_t L2 = 2 * static_cast<std::size_t>(sh.L),
                      Sdv = static_cast<std::size_t>(sh.S) * sh.dv;
    for (int b = 0; b < B; ++b) {
        const VqAttnState& x = st[b];
        const std::size_t held = static_cast<std::size_t>(x.pos - vq_window_start(x.pos, sh.L));
        MESHLM_CHECK(x.pos >= 0 && x.z.size() == held && x.v.size() == held * sh.dv,
                     "VQ attention state holds ", x.z.size(), " window tokens, expected ", held);
        MESHLM_CHECK(x.count.empty() ||
                         (x.count.size() == static_cast<std::size_t>(sh.S) && x.mean.size() == Sdv),
                     "VQ attention state's cache has ", x.count.size(), " codes, expected ", sh.S);
        h.pos[b] = x.pos;
        std::memcpy(h.z + b * L2, x.z.data(), held * sizeof(std::int32_t));
        std::memcpy(h.v + b * L2 * sh.dv, x.v.data(), x.v.size() * sizeof(float));
        if (x.count.empty()) continue;
        std::memcpy(h.count + static_cast<std::size_t>(b) * sh.S, x.count.data(),
                    sh.S * sizeof(float));
        std::memcpy(h.mean + b * Sdv, x.mean.data(), Sdv * sizeof(float));
    }
    DeviceBytes d(lay.bytes);
    MESHLM_CUDA_CHECK(cudaMemcpy(d.get(), host.data(), lay.bytes, cudaMemcpyDefault));
    return d;
}

Geo make_geo(const float* q, int ldq, const std::int32_t* z, const float* v, int ldv,
             const float* codebook, const float* rel, const float* u, const float* vb, int B, int T,
             VqAttnShape sh, const StatePtrs* in) {
    const int Rmax = (T + sh.L - 1) / sh.L + 1;
    const std::size_t smem = 2 * sizeof(float) * (2 * static_cast<std::size_t>(sh.L) + sh.S);
    MESHLM_CHECK(smem <= 48 * 1024, "vq_attention on CUDA: 2 block_len + codes = ", 2 * sh.L + sh.S,
                 " columns need ", smem, " bytes of shared memory (at most 48 KiB)");
    return {q,
            v,
            codebook,
            rel,
            u,
            vb,
            z,
            ldq,
            ldv,
            B,
            T,
            sh.L,
            sh.S,
            sh.dk,
            sh.dv,
            Rmax,
            in ? in->pos : nullptr,
            in ? in->z : nullptr,
            in ? in->v : nullptr};
}

void scan_caches(const Geo& g, float* snaps, const StatePtrs* in, const StatePtrs* out) {
    DeviceBytes work(sizeof(float) * 2 * g.snap_floats() * g.B);
    const StatePtrs none{};
    scan_kernel<<<g.B, kThreads>>>(g, snaps, static_cast<float*>(work.get()), in ? *in : none,
                                   out ? *out : none);
    MESHLM_CUDA_LAUNCHED();
}

}  // namespace vq

void vq_attention_forward(float* out, float* lse, const float* q, int ldq, const std::int32_t* z,
                          const float* v, int ldv, const float* codebook, const float* rel,
                          const float* u, const float* vb, int B, int T, VqAttnShape sh,
                          VqAttnState* state) {
    using namespace vq;
    if (B < 1 || T < 1) return;
    const StateLayout lay(B, sh);
    DeviceBytes in_bytes = state ? stage_states(state, B, sh) : DeviceBytes(0);
    DeviceBytes out_bytes(state ? lay.bytes : 0);
    const StatePtrs in = lay.at(in_bytes.get()), outs = lay.at(out_bytes.get());
    const Geo g =
        make_geo(q, ldq, z, v, ldv, codebook, rel, u, vb, B, T, sh, state ? &in : nullptr);
    DeviceBytes snaps(sizeof(float) * g.snap_floats() * g.Rmax * B);
    float* sn = static_cast<float*>(snaps.get());
    scan_caches(g, sn, state ? &in : nullptr, state ? &outs : nullptr);
    const std::size_t smem = sizeof(float) * g.cols();
    forward_rows_kernel<<<static_cast<unsigned>(B) * T, kThreads, smem>>>(g, sn, out, lse);
    MESHLM_CUDA_LAUNCHED();
    if (!state) return;
    std::vector<char> host(lay.bytes);
    MESHLM_CUDA_CHECK(cudaMemcpy(host.data(), out_bytes.get(), lay.bytes, cudaMemcpyDefault));
    const StatePtrs h = lay.at(host.data());
    const std::size_t L2 = 2 * static_cast<std::size_t>(sh.L),
                      Sdv = static_cast<std::size_t>(sh.S) * sh.dv;
    for (int b = 0; b < B; ++b) {
        VqAttnState& x = state[b];
        x.pos += T;
        const std::size_t held = static_cast<std::size_t>(x.pos - vq_window_start(x.pos, sh.L));
        x.z.assign(h.z + b * L2, h.z + b * L2 + held);
        x.v.assign(h.v + b * L2 * sh.dv, h.v + b * L2 * sh.dv + held * sh.dv);
        x.count.assign(h.count + static_cast<std::size_t>(b) * sh.S,
                       h.count + (b + 1) * static_cast<std::size_t>(sh.S));
        x.mean.assign(h.mean + b * Sdv, h.mean + (b + 1) * Sdv);
    }
}

}  // namespace meshlm::kernels::cuda
