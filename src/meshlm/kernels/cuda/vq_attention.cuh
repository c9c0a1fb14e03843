// What the Transformer-VQ attention kernels (vq_attention.cu, vq_attention_backward.cu) share:
// one sequence's geometry and the positions it reads, the cache snapshots' layout. The algorithm
// is cpu/vq_attention.cpp's; see vq_attention.cu for how it is split into kernels.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "meshlm/kernels/ops/op_params.h"

namespace meshlm::kernels::cuda::vq {

constexpr int kThreads = 128;

// The call's inputs and the carried windows, every pointer on the device.
struct Geo {
    const float *q, *v, *codebook, *rel, *u, *vb;
    const std::int32_t* z;
    int ldq, ldv;
    int B, T, L, S, dk, dv;
    int Rmax;                 // blocks a sequence's call spans at most: ceil(T / L) + 1
    const std::int64_t* pos;  // [B] each sequence's first position, or null (all 0)
    const std::int32_t* hz;   // [B][2L] the carried window's codes (null without state)
    const float* hv;          // [B][2L][dv] their values
    __host__ __device__ int cols() const {
        return 2 * L + S;
    }  // a query's window (at most 2L) and cache columns
    __host__ __device__ std::size_t snap_floats() const {
        return static_cast<std::size_t>(S) * (dv + 1);
    }
};

__device__ inline std::int64_t window_start(std::int64_t pos, int L) {
    return pos / L >= 1 ? (pos / L - 1) * L : 0;
}

// One sequence b: its first position p0, the first one it holds (base), its blocks.
struct Seq {
    int b;
    std::int64_t p0, base, stop, first, end;
    __device__ Seq(const Geo& g, int b_) : b(b_) {
        p0 = g.pos ? g.pos[b] : 0;
        base = window_start(p0, g.L);
        stop = p0 + g.T;
        first = p0 / g.L;
        end = (stop + g.L - 1) / g.L;
    }
    // Position t's code and value row: from the carried window before p0, else the call's rows.
    __device__ int code(const Geo& g, std::int64_t t) const {
        return t < p0 ? g.hz[static_cast<std::size_t>(b) * 2 * g.L + (t - base)]
                      : g.z[static_cast<std::size_t>(b) * g.T + (t - p0)];
    }
    __device__ const float* value(const Geo& g, std::int64_t t) const {
        return t < p0 ? g.hv + (static_cast<std::size_t>(b) * 2 * g.L + (t - base)) * g.dv
                      : g.v + (static_cast<std::size_t>(b) * g.T + (t - p0)) * g.ldv;
    }
    // The call's row of position t, and the first key of block r's window.
    __device__ std::size_t row(const Geo& g, std::int64_t t) const {
        return static_cast<std::size_t>(b) * g.T + (t - p0);
    }
    __device__ static std::int64_t window_of(std::int64_t r, int L) {
        return window_start(r * L, L);
    }
    __device__ std::int64_t qa(std::int64_t r, int L) const { return r * L > p0 ? r * L : p0; }
    __device__ std::int64_t qb(std::int64_t r, int L) const {
        return (r + 1) * L < stop ? (r + 1) * L : stop;
    }
    // Block r's cache snapshot: S counts, then S x dv means.
    template <typename F>
    __device__ F* snap(const Geo& g, F* snaps, std::int64_t r) const {
        return snaps + (static_cast<std::size_t>(b) * g.Rmax + (r - first)) * g.snap_floats();
    }
};

__device__ inline float dot(const float* a, const float* bias, const float* c, int n) {
    float s = 0.f;
    for (int d = 0; d < n; ++d) s += (a[d] + bias[d]) * c[d];
    return s;
}

// Query ti's score on column col (window keys from ws, then the S cache codes when the block
// reads the cache): the CPU's scores(), one entry.
__device__ inline float score(const Geo& g, const Seq& s, const float* qrow, std::int64_t ti,
                              std::int64_t ws, int W, const float* count, int col) {
    if (col < W) {
        const std::int64_t tj = ws + col, dist = ti - tj;
        float sc =
            dot(qrow, g.u, g.codebook + static_cast<std::size_t>(s.code(g, tj)) * g.dk, g.dk);
        if (dist <= g.L) sc += dot(qrow, g.vb, g.rel + static_cast<std::size_t>(dist) * g.dk, g.dk);
        return sc;
    }
    const int c = col - W;
    return count[c] > 0.f ? dot(qrow, g.u, g.codebook + static_cast<std::size_t>(c) * g.dk, g.dk) +
                                logf(count[c])
                          : -INFINITY;
}

// --- Host side (vq_attention.cu) ---

// The B carried states packed for the device: pos [B] | z [B][2L] | v [B][2L][dv] | count [B][S]
// | mean [B][S][dv], each part 16-byte aligned; a window's unused rows are zero.
struct StatePtrs {
    std::int64_t* pos;
    std::int32_t* z;
    float *v, *count, *mean;
};
struct StateLayout {
    std::size_t pos = 0, z = 0, v = 0, count = 0, mean = 0, bytes = 0;  // byte offsets, total
    StateLayout(int B, VqAttnShape sh);
    StatePtrs at(void* base) const;
};

// Stream-ordered device memory for one call's scratch or staged states.
class DeviceBytes {
  public:
    explicit DeviceBytes(std::size_t bytes);
    ~DeviceBytes();
    DeviceBytes(DeviceBytes&& o) noexcept : p_(o.p_) { o.p_ = nullptr; }
    DeviceBytes(const DeviceBytes&) = delete;
    DeviceBytes& operator=(const DeviceBytes&) = delete;
    DeviceBytes& operator=(DeviceBytes&&) = delete;
    void* get() const { return p_; }

  private:
    void* p_ = nullptr;
};

// The B host states packed (StateLayout) and copied to the device; throws on a malformed one.
DeviceBytes stage_states(const VqAttnState* st, int B, VqAttnShape sh);
Geo make_geo(const float* q, int ldq, const std::int32_t* z, const float* v, int ldv,
             const float* codebook, const float* rel, const float* u, const float* vb, int B, int T,
             VqAttnShape sh, const StatePtrs* in);
// Every block's cache snapshot [B][Rmax][S (dv + 1)]; with out, the states after the call.
void scan_caches(const Geo& g, float* snaps, const StatePtrs* in, const StatePtrs* out);

}  // namespace meshlm::kernels::cuda::vq
