// Transformer-VQ's linear-time attention (kernels.h), per sequence over its blocks, the cache
// carried by the seed's `serial` reduction or made by its `matmul` one; sequences (or, with fewer
// sequences than threads, a sequence's blocks) run in parallel, so a result never depends on
// threads.
//
// Queries i of block r (positions t_i), window keys j (positions t_j from the start of block
// r - 1 up to the last query), cache codes s:
//   s_ij = (q_i + u).k_j + [t_i - t_j <= L] Pos_i,(t_i - t_j),  Pos = (q + vb) rel^T;  -inf if t_j
//   > t_i s_is = (q_i + u).c_s + log N_s                                      (-inf where N_s = 0)
//   lse_i = log sum exp s_i;  p = exp(s - lse);  out_i = sum_j p_ij v_j + sum_s p_is U_s
// Before block r the keys of block r - 2 join the cache, a whole block at a time:
//   N_s' = N_s + n_s,  U_s' = U_s N_s / N_s' + (sum of their values of code s) / N_s'
// Backward (softmax's dS = p (dP - dO_i . out_i)):
//   dP_ij = dO_i.v_j, dP_is = dO_i.U_s;  dq_i = sum_j dS_ij k_j + sum_s dS_is c_s + dPos_i rel
//   dk_j += sum_i dS_ij (q_i + u);  dv_j += sum_i p_ij dO_i;  drel += dPos^T (q + vb)
//   du += the content part of dq, dvb += the position part
//   dU_s = sum_i p_is dO_i: each value folded into the cache before block g gets the sum of
//   H_r = dU / N over the blocks r >= g that read it, kept as (the final running sum of H) minus
//   (the running sum when it was folded), so one pass in forward order does it.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "meshlm/core/error.h"
#include "meshlm/kernels/kernels.h"

namespace meshlm::kernels {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// One sequence's window and cache as its blocks go by: the forward, the backward and a decode
// step rebuild the same ones.
struct Walk {
    VqAttnShape sh{};
    std::int64_t p0 = 0, base = 0;   // the call's first position; the first one held
    std::vector<std::int32_t> z;     // codes of positions [base, p0 + T)
    std::vector<const float*> vrow;  // their value rows
    std::vector<float> count, mean;  // the cache
    std::int64_t cached = 0;         // positions [0, cached) are in it
    std::vector<float> sum, n;       // fold scratch
    std::vector<int> touched;

    // Starts the walk of one call; the vectors keep their capacity from earlier calls (the
    // walks are thread_local), so a step in steady state allocates nothing.
    void reset(VqAttnShape s, const VqAttnState* st, const std::int32_t* zc, const float* vc,
               int ldv, int T) {
        sh = s, p0 = st ? st->pos : 0, base = vq_window_start(p0, s.L);
        const std::size_t held = static_cast<std::size_t>(p0 - base);
        MESHLM_CHECK(!st || (st->z.size() == held && st->v.size() == held * s.dv),
                     "VQ attention state holds ", st ? st->z.size() : 0,
                     " window tokens, expected ", held);
        z.resize(held + T);
        vrow.resize(held + T);
        for (std::size_t i = 0; i < held; ++i) z[i] = st->z[i], vrow[i] = st->v.data() + i * s.dv;
        for (int t = 0; t < T; ++t)
            z[held + t] = zc[t], vrow[held + t] = vc + static_cast<std::size_t>(t) * ldv;
        if (st && !st->count.empty()) {
            count.assign(st->count.begin(), st->count.end());
            mean.assign(st->mean.begin(), st->mean.end());
        } else {
            count.assign(s.S, 0.f);
            mean.assign(static_cast<std::size_t>(s.S) * s.dv, 0.f);
        }
        cached = base;
        sum.assign(static_cast<std::size_t>(s.S) * s.dv, 0.f);
        n.assign(s.S, 0.f);
        touched.clear();
    }
    std::int32_t code(std::int64_t t) const { return z[t - base]; }
    const float* value(std::int64_t t) const { return vrow[t - base]; }
    bool cache_empty() const { return cached == 0; }

    // Folds positions [cached, upto) into the cache block by block; on_fold(t) sees each.
    template <typename F>
    void fold_to(std::int64_t upto, F&& on_fold) {
        const int dv = sh.dv;
        while (cached < upto) {
            const std::int64_t e = std::min(upto, cached + sh.L);
            for (std::int64_t t = cached; t < e; ++t) {
                const int s = code(t);
                if (n[s] == 0.f) touched.push_back(s);
                n[s] += 1.f;
                float* a = sum.data() + static_cast<std::size_t>(s) * dv;
                const float* v = value(t);
                for (int c = 0; c < dv; ++c) a[c] += v[c];
                on_fold(t);
            }
            for (int s : touched) {
                const float total = count[s] + n[s], keep = count[s] / total, add = 1.f / total;
                float* m = mean.data() + static_cast<std::size_t>(s) * dv;
                float* a = sum.data() + static_cast<std::size_t>(s) * dv;
                for (int c = 0; c < dv; ++c) m[c] = m[c] * keep + a[c] * add, a[c] = 0.f;
                count[s] = total;
                n[s] = 0.f;
            }
            touched.clear();
            cached = e;
        }
    }
    void fold_to(std::int64_t upto) {
        fold_to(upto, [](std::int64_t) {});
    }
};

// Per-thread scratch for one block of queries (thread_local: sized once per shape).
struct Block {
    int nq = 0, W = 0, width = 0, lds = 0;
    std::int64_t qa = 0, ws = 0;
    std::vector<float> qu, qv, keys, vals, s, pos;
    void shape(VqAttnShape sh) {
        lds = 2 * sh.L + sh.S;
        qu.resize(static_cast<std::size_t>(sh.L) * sh.dk);
        qv.resize(qu.size());
        keys.resize(2 * qu.size());
        vals.resize(static_cast<std::size_t>(2 * sh.L) * sh.dv);
        s.resize(static_cast<std::size_t>(sh.L) * lds);
        pos.resize(static_cast<std::size_t>(sh.L) * (sh.L + 1));
    }
};
thread_local Block t_block;
thread_local Walk t_walk, t_scan;

// The cache a block reads: the walk's live one, or a snapshot taken when the blocks run in
// parallel.
struct Cache {
    const float *count, *mean;
    bool empty;
};

// The inputs every block of a call reads.
struct Inputs {
    const float *q, *v, *codebook, *rel, *u, *vb;
    const std::int32_t* z;
    int ldq, ldv, T;
};

// Scores of the queries at positions [qa, qb) (rows of q from the call's first position) over
// their window and the cache, into b.s (row stride b.lds; the cache's S columns after the W
// window columns when it holds anything).
void scores(Block& b, const Walk& w, const Cache& cache, std::int64_t qa, std::int64_t qb,
            const Inputs& in) {
    const VqAttnShape& sh = w.sh;
    const int dk = sh.dk, L = sh.L;
    b.qa = qa;
    b.ws = std::max(w.base, vq_window_start(qa, L));
    b.nq = static_cast<int>(qb - qa);
    b.W = static_cast<int>(qb - b.ws);
    for (int i = 0; i < b.nq; ++i) {
        const float* qi = in.q + static_cast<std::size_t>(qa - w.p0 + i) * in.ldq;
        float* a = b.qu.data() + static_cast<std::size_t>(i) * dk;
        float* c = b.qv.data() + static_cast<std::size_t>(i) * dk;
        for (int d = 0; d < dk; ++d) a[d] = qi[d] + in.u[d], c[d] = qi[d] + in.vb[d];
    }
    for (int j = 0; j < b.W; ++j) {
        const std::int64_t t = b.ws + j;
        std::memcpy(b.keys.data() + static_cast<std::size_t>(j) * dk,
                    in.codebook + static_cast<std::size_t>(w.code(t)) * dk, dk * sizeof(float));
        std::memcpy(b.vals.data() + static_cast<std::size_t>(j) * sh.dv, w.value(t),
                    sh.dv * sizeof(float));
    }
    float* s = b.s.data();
    gemm(false, true, b.nq, b.W, dk, 1.f, b.qu.data(), dk, b.keys.data(), dk, 0.f, s, b.lds);
    gemm(false, true, b.nq, L + 1, dk, 1.f, b.qv.data(), dk, in.rel, dk, 0.f, b.pos.data(), L + 1);
    for (int i = 0; i < b.nq; ++i) {
        float* si = s + static_cast<std::size_t>(i) * b.lds;
        const float* pi = b.pos.data() + static_cast<std::size_t>(i) * (L + 1);
        const std::int64_t ti = qa + i;
        for (int j = 0; j < b.W; ++j) {
            const std::int64_t d = ti - (b.ws + j);
            if (d < 0)
                si[j] = kNegInf;
            else if (d <= L)
                si[j] += pi[d];
        }
    }
    b.width = b.W;
    if (cache.empty) return;
    gemm(false, true, b.nq, sh.S, dk, 1.f, b.qu.data(), dk, in.codebook, dk, 0.f, s + b.W, b.lds);
    for (int i = 0; i < b.nq; ++i) {
        float* sc = s + static_cast<std::size_t>(i) * b.lds + b.W;
        for (int c = 0; c < sh.S; ++c)
            sc[c] = cache.count[c] > 0.f ? sc[c] + std::log(cache.count[c]) : kNegInf;
    }
    b.width += sh.S;
}

// The absolute blocks a call touches and each one's queries.
struct Blocks {
    std::int64_t first, end;  // block indices [first, end)
    std::int64_t p0, stop;    // positions [p0, stop)
    int L;
    std::int64_t qa(std::int64_t r) const { return std::max(p0, r * L); }
    std::int64_t qb(std::int64_t r) const { return std::min(stop, (r + 1) * L); }
};
Blocks blocks_of(const Walk& w, int T) {
    const std::int64_t stop = w.p0 + T, L = w.sh.L;
    return {w.p0 / L, (stop + L - 1) / L, w.p0, stop, w.sh.L};
}

// The cache every block of a call reads, by the matmul reduction (VqReduction): the walk's
// starting cache and each block folded after it are units u with counts n_u and means M_u;
// block i reads the units up to k_i: N = sum n_u, U = sum_u (n_u / N) M_u, one GEMM per code
// over (blocks x units). snaps: per block, S counts then S x dv means (stride per).
void matmul_caches(const Walk& w, const Blocks& bl, float* snaps, std::size_t per, char* empty) {
    const VqAttnShape sh = w.sh;
    const int S = sh.S, dv = sh.dv, L = sh.L;
    const std::size_t R = static_cast<std::size_t>(bl.end - bl.first),
                      unit = static_cast<std::size_t>(S) * dv;
    auto last_unit = [&](std::size_t i) {  // units block i reads: [0, last_unit]
        const std::int64_t ws = vq_window_start(bl.qa(bl.first + static_cast<std::int64_t>(i)), L);
        return static_cast<std::size_t>(std::max<std::int64_t>(0, (ws - w.base) / L));
    };
    const std::size_t U = last_unit(R - 1) + 1;
    thread_local std::vector<float> n_store, m_store, wt_store;
    std::vector<float>& n = n_store;  // [U][S]
    std::vector<float>& m = m_store;  // [U][S][dv]
    std::vector<float>& wt = wt_store;
    n.assign(U * S, 0.f), m.assign(U * unit, 0.f), wt.resize(R * U);
    std::copy(w.count.begin(), w.count.end(), n.begin());
    std::copy(w.mean.begin(), w.mean.end(), m.begin());
    for (std::size_t u = 1; u < U; ++u) {
        float* nu = n.data() + u * S;
        float* mu = m.data() + u * unit;
        for (std::int64_t t = w.base + static_cast<std::int64_t>(u - 1) * L, e = t + L; t < e;
             ++t) {
            const int s = w.code(t);
            nu[s] += 1.f;
            const float* v = w.value(t);
            float* a = mu + static_cast<std::size_t>(s) * dv;
            for (int c = 0; c < dv; ++c) a[c] += v[c];
        }
        for (int s = 0; s < S; ++s)
            if (nu[s] > 1.f) {
                const float inv = 1.f / nu[s];
                float* a = mu + static_cast<std::size_t>(s) * dv;
                for (int c = 0; c < dv; ++c) a[c] *= inv;
            }
    }
    for (std::size_t i = 0; i < R; ++i) {
        const std::size_t k = last_unit(i);
        float* cnt = snaps + i * per;
        for (int s = 0; s < S; ++s) {
            float a = 0.f;
            for (std::size_t u = 0; u <= k; ++u) a += n[u * S + s];
            cnt[s] = a;
        }
        empty[i] = w.base == 0 && k == 0;
    }
    for (int s = 0; s < S; ++s) {
        bool any = false;
        for (std::size_t i = 0; i < R; ++i) {
            const float N = snaps[i * per + s], k = static_cast<float>(last_unit(i));
            for (std::size_t u = 0; u < U; ++u) {
                const float x = static_cast<float>(u) <= k ? n[u * S + s] / std::max(N, 1.f) : 0.f;
                wt[i * U + u] = x;
                any = any || x != 0.f;
            }
        }
        float* out = snaps + S + static_cast<std::size_t>(s) * dv;
        if (!any) {
            for (std::size_t i = 0; i < R; ++i) std::fill_n(out + i * per, dv, 0.f);
            continue;
        }
        gemm(false, false, static_cast<int>(R), dv, static_cast<int>(U), 1.f, wt.data(),
             static_cast<int>(U), m.data() + static_cast<std::size_t>(s) * dv,
             static_cast<int>(unit), 0.f, out, static_cast<int>(per));
    }
}

// Runs one sequence's blocks: serially with the walk's live cache (the serial reduction, one
// thread), or with a cache per block made before any block runs -- by one serial pass (O(T dv))
// or by the matmul reduction -- and then, when `parallel`, the blocks across the threads (the
// seed's TP-branch layout: every block at once). body(block, r, cache) must write only block r's
// results; apply(r) runs in block order, with the walk folded for block r (its on_fold sees each
// folded position).
template <typename Body, typename Apply, typename OnFold>
void run_blocks(Walk& w, int T, bool parallel, Body&& body, Apply&& apply, OnFold&& on_fold) {
    const Blocks bl = blocks_of(w, T);
    const VqAttnShape sh = w.sh;
    // One block reads the starting cache as it is: nothing to reduce (a decode step).
    const bool matmul = sh.reduction == VqReduction::matmul && bl.end - bl.first > 1;
    if (!parallel && !matmul) {
        Block& b = t_block;
        b.shape(sh);
        for (std::int64_t r = bl.first; r < bl.end; ++r) {
            w.fold_to(vq_window_start(bl.qa(r), sh.L), on_fold);
            body(b, r, Cache{w.count.data(), w.mean.data(), w.cache_empty()});
            apply(r);
        }
        return;
    }
    const std::size_t R = static_cast<std::size_t>(bl.end - bl.first),
                      per = static_cast<std::size_t>(sh.S) * (sh.dv + 1);
    // Bound to references here: inside the parallel region a thread_local's name would mean
    // each thread's own copy; the references are this thread's, shared.
    thread_local std::vector<float> snaps_store;
    thread_local std::vector<char> empty_store;
    std::vector<float>& snaps = snaps_store;
    std::vector<char>& empty = empty_store;
    snaps.resize(R * per), empty.resize(R);
    if (matmul) {
        matmul_caches(w, bl, snaps.data(), per, empty.data());
    } else {
        Walk& scan = t_scan;  // the same folds, without on_fold: apply() replays them below
        scan = w;
        for (std::size_t i = 0; i < R; ++i) {
            scan.fold_to(vq_window_start(bl.qa(bl.first + i), sh.L));
            std::copy(scan.count.begin(), scan.count.end(), snaps.begin() + i * per);
            std::copy(scan.mean.begin(), scan.mean.end(), snaps.begin() + i * per + sh.S);
            empty[i] = scan.cache_empty();
        }
    }
    auto cache = [&](std::size_t i) {
        return Cache{snaps.data() + i * per, snaps.data() + i * per + sh.S, empty[i] != 0};
    };
    if (!parallel) {  // one thread: each block's results applied before the next block runs
        Block& b = t_block;
        b.shape(sh);
        for (std::size_t i = 0; i < R; ++i) {
            const std::int64_t r = bl.first + static_cast<std::int64_t>(i);
            w.fold_to(vq_window_start(bl.qa(r), sh.L), on_fold);
            body(b, r, cache(i));
            apply(r);
        }
        return;
    }
#pragma omp parallel
    {
        Block& b = t_block;
        b.shape(sh);
#pragma omp for schedule(static, 1)
        for (std::size_t i = 0; i < R; ++i)
            body(b, bl.first + static_cast<std::int64_t>(i), cache(i));
    }
    for (std::int64_t r = bl.first; r < bl.end; ++r) {
        w.fold_to(vq_window_start(bl.qa(r), sh.L), on_fold);
        apply(r);
    }
}

// One block's forward: out and lse rows of its queries.
void forward_block(Block& b, const Walk& w, const Cache& cache, std::int64_t qa, std::int64_t qb,
                   const Inputs& in, float* out, float* lse) {
    const int dv = w.sh.dv;
    scores(b, w, cache, qa, qb, in);
    for (int i = 0; i < b.nq; ++i) {
        float* si = b.s.data() + static_cast<std::size_t>(i) * b.lds;
        float m = kNegInf;
        for (int j = 0; j < b.width; ++j) m = std::max(m, si[j]);
        float d = 0.f;
        for (int j = 0; j < b.width; ++j) d += (si[j] = std::exp(si[j] - m));
        const float inv = 1.f / d;
        for (int j = 0; j < b.width; ++j) si[j] *= inv;
        lse[qa - w.p0 + i] = m + std::log(d);
    }
    float* o = out + static_cast<std::size_t>(qa - w.p0) * dv;
    gemm(false, false, b.nq, dv, b.W, 1.f, b.s.data(), b.lds, b.vals.data(), dv, 0.f, o, dv);
    if (b.width > b.W)
        gemm(false, false, b.nq, dv, w.sh.S, 1.f, b.s.data() + b.W, b.lds, cache.mean, dv, 1.f, o,
             dv);
}

void forward_sequence(float* out, float* lse, const Inputs& in, VqAttnShape sh, VqAttnState* st,
                      bool parallel) {
    Walk& w = t_walk;
    w.reset(sh, st, in.z, in.v, in.ldv, in.T);
    const Blocks bl = blocks_of(w, in.T);
    run_blocks(
        w, in.T, parallel,
        [&](Block& b, std::int64_t r, const Cache& c) {
            forward_block(b, w, c, bl.qa(r), bl.qb(r), in, out, lse);
        },
        [](std::int64_t) {}, [](std::int64_t) {});
    if (!st) return;
    const int dv = sh.dv;
    const std::int64_t end = bl.stop, ws = vq_window_start(end, sh.L);
    w.fold_to(ws);
    st->pos = end;
    st->z.assign(w.z.begin() + (ws - w.base), w.z.end());
    // The new window may read the old one's rows (st->v): built apart, then swapped in.
    thread_local std::vector<float> vals;
    vals.resize(static_cast<std::size_t>(end - ws) * dv);
    for (std::int64_t t = ws; t < end; ++t)
        std::memcpy(vals.data() + static_cast<std::size_t>(t - ws) * dv, w.value(t),
                    dv * sizeof(float));
    st->v.swap(vals);
    st->count.assign(w.count.begin(), w.count.end());
    st->mean.assign(w.mean.begin(), w.mean.end());
}

// What one block's backward leaves for the in-order pass: its window keys' and values'
// gradients, dU / N over the codes (when it read the cache), and its du | dvb | drel.
struct BlockGrads {
    std::vector<float> dkeys, dvals, h, acc;
    std::int64_t ws = 0;
    int W = 0;
    bool cache = false;
};

void backward_block(Block& b, const Walk& w, const Cache& cache, std::int64_t qa, std::int64_t qb,
                    const Inputs& in, const float* dout, const float* out, const float* lse,
                    float* dq, BlockGrads& g, std::vector<float>& dp, std::vector<float>& dqu,
                    std::vector<float>& dqv, std::vector<float>& dpos, std::vector<float>& dU) {
    const VqAttnShape& sh = w.sh;
    const int L = sh.L, dkw = sh.dk, dvw = sh.dv, S = sh.S;
    scores(b, w, cache, qa, qb, in);
    const int nq = b.nq, W = b.W, lds = b.lds;
    const float* dO = dout + static_cast<std::size_t>(qa - w.p0) * dvw;
    const float* O = out + static_cast<std::size_t>(qa - w.p0) * dvw;
    g.cache = b.width > W;
    g.ws = b.ws, g.W = W;
    gemm(false, true, nq, W, dvw, 1.f, dO, dvw, b.vals.data(), dvw, 0.f, dp.data(), lds);
    if (g.cache)
        gemm(false, true, nq, S, dvw, 1.f, dO, dvw, cache.mean, dvw, 0.f, dp.data() + W, lds);
    for (int i = 0; i < nq; ++i) {
        float* pi = b.s.data() + static_cast<std::size_t>(i) * lds;
        float* gi = dp.data() + static_cast<std::size_t>(i) * lds;
        const float* oi = O + static_cast<std::size_t>(i) * dvw;
        const float* gO = dO + static_cast<std::size_t>(i) * dvw;
        float delta = 0.f;
        for (int c = 0; c < dvw; ++c) delta += gO[c] * oi[c];
        const float l = lse[qa - w.p0 + i];
        for (int j = 0; j < b.width; ++j) {
            pi[j] = std::exp(pi[j] - l);
            gi[j] = pi[j] * (gi[j] - delta);
        }
        // The position part: distance d reads key t_i - d when it is in the window.
        float* gp = dpos.data() + static_cast<std::size_t>(i) * (L + 1);
        const std::int64_t ti = qa + i;
        for (int d = 0; d <= L; ++d) {
            const std::int64_t j = ti - d - b.ws;
            gp[d] = j >= 0 ? gi[j] : 0.f;
        }
    }
    gemm(false, false, nq, dkw, W, 1.f, dp.data(), lds, b.keys.data(), dkw, 0.f, dqu.data(), dkw);
    if (g.cache)
        gemm(false, false, nq, dkw, S, 1.f, dp.data() + W, lds, in.codebook, dkw, 1.f, dqu.data(),
             dkw);
    gemm(false, false, nq, dkw, L + 1, 1.f, dpos.data(), L + 1, in.rel, dkw, 0.f, dqv.data(), dkw);
    float *du = g.acc.data(), *dvb = du + dkw, *drel = dvb + dkw;
    std::fill(g.acc.begin(), g.acc.end(), 0.f);
    gemm(true, false, L + 1, dkw, nq, 1.f, dpos.data(), L + 1, b.qv.data(), dkw, 0.f, drel, dkw);
    for (int i = 0; i < nq; ++i) {
        float* gq = dq + static_cast<std::size_t>(qa - w.p0 + i) * in.ldq;
        const float* a = dqu.data() + static_cast<std::size_t>(i) * dkw;
        const float* c = dqv.data() + static_cast<std::size_t>(i) * dkw;
        for (int d = 0; d < dkw; ++d) gq[d] = a[d] + c[d], du[d] += a[d], dvb[d] += c[d];
    }
    gemm(true, false, W, dkw, nq, 1.f, dp.data(), lds, b.qu.data(), dkw, 0.f, g.dkeys.data(), dkw);
    gemm(true, false, W, dvw, nq, 1.f, b.s.data(), lds, dO, dvw, 0.f, g.dvals.data(), dvw);
    if (!g.cache) return;
    gemm(true, false, S, dvw, nq, 1.f, b.s.data() + W, lds, dO, dvw, 0.f, dU.data(), dvw);
    for (int s = 0; s < S; ++s) {
        float* h = g.h.data() + static_cast<std::size_t>(s) * dvw;
        const float* a = dU.data() + static_cast<std::size_t>(s) * dvw;
        const float inv = cache.count[s] > 0.f ? 1.f / cache.count[s] : 0.f;
        for (int c = 0; c < dvw; ++c) h[c] = a[c] * inv;
    }
}

// acc: du [dk] | dvb [dk] | drel [(L + 1) dk] of this sequence.
void backward_sequence(float* dq, float* dk, float* dv, float* acc, const float* dout,
                       const float* out, const float* lse, const Inputs& in, VqAttnShape sh,
                       const VqAttnState* st, bool parallel) {
    Walk& w = t_walk;
    w.reset(sh, st, in.z, in.v, in.ldv, in.T);
    const int L = sh.L, dkw = sh.dk, dvw = sh.dv, S = sh.S, T = in.T;
    for (int t = 0; t < T; ++t) {
        std::fill_n(dk + static_cast<std::size_t>(t) * in.ldq, dkw, 0.f);
        std::fill_n(dv + static_cast<std::size_t>(t) * in.ldv, dvw, 0.f);
    }
    const Blocks bl = blocks_of(w, T);
    const std::size_t n_acc = static_cast<std::size_t>(L + 3) * dkw;
    // Serially one set of block gradients, applied at once; in parallel one per block.
    thread_local std::vector<BlockGrads> grads_store;  // shared with the block threads
    std::vector<BlockGrads>& grads = grads_store;
    grads.resize(parallel ? static_cast<std::size_t>(bl.end - bl.first) : 1);
    for (auto& g : grads) {
        g.dkeys.resize(static_cast<std::size_t>(2 * L) * dkw);
        g.dvals.resize(static_cast<std::size_t>(2 * L) * dvw);
        g.h.resize(static_cast<std::size_t>(S) * dvw);
        g.acc.resize(n_acc);
    }
    auto grads_of = [&](std::int64_t r) -> BlockGrads& {
        return grads[parallel ? static_cast<std::size_t>(r - bl.first) : 0];
    };
    thread_local std::vector<float> hsum_store;
    std::vector<float>& hsum = hsum_store;
    hsum.assign(static_cast<std::size_t>(S) * dvw, 0.f);
    auto dv_row = [&](std::int64_t t) { return dv + static_cast<std::size_t>(t - w.p0) * in.ldv; };
    auto subtract_hsum = [&](std::int64_t t) {
        if (t < w.p0) return;  // a carried value: no gradient
        const float* h = hsum.data() + static_cast<std::size_t>(w.code(t)) * dvw;
        float* g = dv_row(t);
        for (int c = 0; c < dvw; ++c) g[c] -= h[c];
    };
    run_blocks(
        w, T, parallel,
        [&](Block& b, std::int64_t r, const Cache& c) {
            // Scratch per call: a thread runs several blocks, each sized by the shape.
            thread_local std::vector<float> dp, dqu, dqv, dpos, dU;
            dp.resize(b.s.size()), dqu.resize(b.qu.size()), dqv.resize(b.qu.size());
            dpos.resize(b.pos.size()), dU.resize(static_cast<std::size_t>(S) * dvw);
            backward_block(b, w, c, bl.qa(r), bl.qb(r), in, dout, out, lse, dq, grads_of(r), dp,
                           dqu, dqv, dpos, dU);
        },
        [&](std::int64_t r) {
            // In block order: the window's key and value gradients, the cache's running sum,
            // the vector sums -- the same additions in the same order either way.
            const BlockGrads& g = grads_of(r);
            for (int j = 0; j < g.W; ++j) {
                const std::int64_t t = g.ws + j;
                if (t < w.p0) continue;
                float* gk = dk + static_cast<std::size_t>(t - w.p0) * in.ldq;
                const float* a = g.dkeys.data() + static_cast<std::size_t>(j) * dkw;
                for (int d = 0; d < dkw; ++d) gk[d] += a[d];
                float* gv = dv_row(t);
                const float* c = g.dvals.data() + static_cast<std::size_t>(j) * dvw;
                for (int d = 0; d < dvw; ++d) gv[d] += c[d];
            }
            for (std::size_t i = 0; i < n_acc; ++i) acc[i] += g.acc[i];
            if (g.cache)
                for (std::size_t i = 0; i < hsum.size(); ++i) hsum[i] += g.h[i];
        },
        subtract_hsum);
    // Every value of this call folded into the cache gets the running sum's final value.
    for (std::int64_t t = std::max(w.p0, w.base); t < w.cached; ++t) {
        const float* h = hsum.data() + static_cast<std::size_t>(w.code(t)) * dvw;
        float* g = dv_row(t);
        for (int c = 0; c < dvw; ++c) g[c] += h[c];
    }
}

// Sequences across the threads when there are enough of them; else each sequence's blocks.
// Work is dealt out statically: a thread's scratch (thread_local, sized on first use) then
// serves the same share every step, so steady-state steps allocate nothing.
bool blocks_in_parallel(int B) {
    return B < omp_get_max_threads() && !omp_in_parallel();
}

}  // namespace

void vq_attention_forward(float* out, float* lse, const float* q, int ldq, const std::int32_t* z,
                          const float* v, int ldv, const float* codebook, const float* rel,
                          const float* u, const float* vb, int B, int T, VqAttnShape sh,
                          VqAttnState* state) {
    const bool blocks = blocks_in_parallel(B);
#pragma omp parallel for schedule(static, 1) if (!blocks)
    for (int b = 0; b < B; ++b) {
        const std::size_t row = static_cast<std::size_t>(b) * T;
        const Inputs in{q + row * ldq, v + row * ldv, codebook, rel, u, vb, z + row, ldq, ldv, T};
        forward_sequence(out + row * sh.dv, lse + row, in, sh, state ? state + b : nullptr, blocks);
    }
}

void vq_attention_backward(float* dq, float* dk, float* dv, float* du, float* dvb, float* drel,
                           const float* dout, const float* out, const float* lse, const float* q,
                           int ldq, const std::int32_t* z, const float* v, int ldv,
                           const float* codebook, const float* rel, const float* u, const float* vb,
                           int B, int T, VqAttnShape sh, const VqAttnState* state) {
    const std::size_t per = static_cast<std::size_t>(sh.L + 3) * sh.dk;
    thread_local std::vector<float> acc_store;  // shared with the sequence threads
    std::vector<float>& acc = acc_store;
    acc.assign(per * B, 0.f);
    const bool blocks = blocks_in_parallel(B);
#pragma omp parallel for schedule(static, 1) if (!blocks)
    for (int b = 0; b < B; ++b) {
        const std::size_t row = static_cast<std::size_t>(b) * T;
        const Inputs in{q + row * ldq, v + row * ldv, codebook, rel, u, vb, z + row, ldq, ldv, T};
        backward_sequence(dq + row * ldq, dk + row * ldq, dv + row * ldv, acc.data() + b * per,
                          dout + row * sh.dv, out + row * sh.dv, lse + row, in, sh,
                          state ? state + b : nullptr, blocks);
    }
    // In sequence order: the same sums for any thread count.
    for (int b = 0; b < B; ++b) {
        const float* a = acc.data() + b * per;
        for (int d = 0; d < sh.dk; ++d) du[d] += a[d], dvb[d] += a[sh.dk + d];
        for (std::size_t i = 0; i < static_cast<std::size_t>(sh.L + 1) * sh.dk; ++i)
            drel[i] += a[2 * sh.dk + i];
    }
}

void vq_quantize(std::int32_t* z, float* err, const float* k, int ldk, const float* codebook, int N,
                 int S, int dk) {
    thread_local std::vector<float> cnorm_store;  // shared with the row threads
    std::vector<float>& cnorm = cnorm_store;
    cnorm.resize(S);
    for (int s = 0; s < S; ++s) {
        float a = 0.f;
        for (int d = 0; d < dk; ++d)
            a += codebook[static_cast<std::size_t>(s) * dk + d] *
                 codebook[static_cast<std::size_t>(s) * dk + d];
        cnorm[s] = a;
    }
    constexpr int kRows = 64;
    const int chunks = (N + kRows - 1) / kRows;
#pragma omp parallel
    {
        thread_local std::vector<float> dots;
        dots.resize(static_cast<std::size_t>(kRows) * S);
#pragma omp for schedule(static)
        for (int c = 0; c < chunks; ++c) {
            const int n0 = c * kRows, rows = std::min(kRows, N - n0);
            // ||k - c_s||^2 = ||k||^2 - 2 k.c_s + ||c_s||^2: the argmin needs only the last two.
            gemm(false, true, rows, S, dk, -2.f, k + static_cast<std::size_t>(n0) * ldk, ldk,
                 codebook, dk, 0.f, dots.data(), S);
            for (int i = 0; i < rows; ++i) {
                const float* di = dots.data() + static_cast<std::size_t>(i) * S;
                int best = 0;
                float bd = di[0] + cnorm[0];
                for (int s = 1; s < S; ++s)
                    if (di[s] + cnorm[s] < bd) bd = di[s] + cnorm[s], best = s;
                const std::size_t n = static_cast<std::size_t>(n0 + i);
                z[n] = best;
                const float* kn = k + n * ldk;
                const float* cb = codebook + static_cast<std::size_t>(best) * dk;
                float e = 0.f;
                for (int d = 0; d < dk; ++d) e += (kn[d] - cb[d]) * (kn[d] - cb[d]);
                err[n] = e;
            }
        }
    }
}

}  // namespace meshlm::kernels
