// Transformer-VQ's linear-time attention against plain quadratic softmax attention over the same
// quantized keys and biases (written out here in double, one (query, key) pair at a time), and
// its state: one call equals the same tokens fed in pieces, however they are cut. Forward values
// are the quadratic ones exactly; gradients too, with the seed's rule for keys: a key older than
// the query's window is read through the stop-gradient codebook.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kernel_check.h"
#include "meshlm/kernels/kernels.h"

namespace meshlm::test {
namespace {

struct Case {
    int B, T, L, S, dk, dv;
    int codes_used;  // z draws from the first codes_used codes: the rest stay empty
};

struct Inputs {
    Case c;
    std::vector<float> q, v, codebook, rel, u, vb, dout;
    std::vector<std::int32_t> z;
};

Inputs make(const Case& c, unsigned seed) {
    Inputs in{c, {}, {}, {}, {}, {}, {}, {}, {}};
    const std::size_t N = static_cast<std::size_t>(c.B) * c.T;
    in.q = randn(N * c.dk, seed, 0.8f);
    in.v = randn(N * c.dv, seed + 1);
    in.codebook = randn(static_cast<std::size_t>(c.S) * c.dk, seed + 2, 0.8f);
    in.rel = randn(static_cast<std::size_t>(c.L + 1) * c.dk, seed + 3, 0.5f);
    in.u = randn(c.dk, seed + 4, 0.3f);
    in.vb = randn(c.dk, seed + 5, 0.3f);
    in.dout = randn(N * c.dv, seed + 6);
    std::mt19937 rng(seed + 7);
    std::uniform_int_distribution<int> pick(0, c.codes_used - 1);
    in.z.resize(N);
    for (auto& x : in.z) x = pick(rng);
    return in;
}

kn::VqAttnShape shape(const Case& c, kn::VqReduction red = kn::VqReduction::serial) {
    return {c.L, c.S, c.dk, c.dv, red};
}
const kn::VqReduction kReductions[] = {kn::VqReduction::serial, kn::VqReduction::matmul};
const char* name(kn::VqReduction r) {
    return r == kn::VqReduction::serial ? "serial" : "matmul";
}

// Quadratic attention of one sequence in double: the forward and, for dout, every gradient.
// `first` = the first position whose inputs take gradients (earlier ones are a carried state).
struct Quadratic {
    std::vector<double> out, dq, dk, dv, du, dvb, drel;
};
Quadratic quadratic(const Inputs& in, int b, int first = 0, int dout_from = 0) {
    const Case& c = in.c;
    const int T = c.T, dk = c.dk, dv = c.dv, L = c.L;
    const std::size_t r0 = static_cast<std::size_t>(b) * T;
    auto q = [&](int i, int d) { return static_cast<double>(in.q[(r0 + i) * dk + d]); };
    auto key = [&](int j, int d) {
        return static_cast<double>(in.codebook[static_cast<std::size_t>(in.z[r0 + j]) * dk + d]);
    };
    auto val = [&](int j, int d) { return static_cast<double>(in.v[(r0 + j) * dv + d]); };
    auto rel = [&](int dist, int d) { return static_cast<double>(in.rel[dist * dk + d]); };
    Quadratic r;
    r.out.assign(static_cast<std::size_t>(T) * dv, 0);
    r.dq.assign(static_cast<std::size_t>(T) * dk, 0);
    r.dk = r.dq;
    r.dv = r.out;
    r.du.assign(dk, 0);
    r.dvb.assign(dk, 0);
    r.drel.assign(static_cast<std::size_t>(L + 1) * dk, 0);
    for (int i = 0; i < T; ++i) {
        std::vector<double> s(i + 1), p(i + 1);
        double m = -1e300;
        for (int j = 0; j <= i; ++j) {
            double a = 0;
            for (int d = 0; d < dk; ++d) a += (q(i, d) + in.u[d]) * key(j, d);
            if (i - j <= L)
                for (int d = 0; d < dk; ++d) a += (q(i, d) + in.vb[d]) * rel(i - j, d);
            s[j] = a;
            m = std::max(m, a);
        }
        double sum = 0;
        for (int j = 0; j <= i; ++j) sum += p[j] = std::exp(s[j] - m);
        for (int j = 0; j <= i; ++j) p[j] /= sum;
        for (int j = 0; j <= i; ++j)
            for (int d = 0; d < dv; ++d)
                r.out[static_cast<std::size_t>(i) * dv + d] += p[j] * val(j, d);
        if (i < dout_from) continue;
        // Backward of this query's row.
        auto g = [&](int d) { return static_cast<double>(in.dout[(r0 + i) * dv + d]); };
        std::vector<double> ds(i + 1);
        double delta = 0;
        for (int d = 0; d < dv; ++d) delta += g(d) * r.out[static_cast<std::size_t>(i) * dv + d];
        for (int j = 0; j <= i; ++j) {
            double dp = 0;
            for (int d = 0; d < dv; ++d) dp += g(d) * val(j, d);
            ds[j] = p[j] * (dp - delta);
        }
        for (int j = 0; j <= i; ++j) {
            for (int d = 0; d < dk; ++d) {
                const double kc = ds[j] * key(j, d);
                r.dq[static_cast<std::size_t>(i) * dk + d] += kc;
                r.du[d] += kc;
                // Keys older than the window are read as their codeword in the cache, which
                // takes no gradient (the seed's stop-gradient codebook): the straight-through
                // gradient reaches a key only from the queries of its block and the next one.
                if (j >= first && j / L >= i / L - 1)
                    r.dk[static_cast<std::size_t>(j) * dk + d] += ds[j] * (q(i, d) + in.u[d]);
                if (i - j <= L) {
                    const double pc = ds[j] * rel(i - j, d);
                    r.dq[static_cast<std::size_t>(i) * dk + d] += pc;
                    r.dvb[d] += pc;
                    r.drel[static_cast<std::size_t>(i - j) * dk + d] +=
                        ds[j] * (q(i, d) + in.vb[d]);
                }
            }
            if (j >= first)
                for (int d = 0; d < dv; ++d)
                    r.dv[static_cast<std::size_t>(j) * dv + d] += p[j] * g(d);
        }
    }
    return r;
}

// max |a - b| / max(max |b|, 1e-3)
double rel_err(const float* a, const std::vector<double>& b, std::size_t n, std::size_t at = 0) {
    double scale = 1e-3, err = 0;
    for (std::size_t i = 0; i < n; ++i) scale = std::max(scale, std::fabs(b[at + i]));
    for (std::size_t i = 0; i < n; ++i) err = std::max(err, std::fabs(a[i] - b[at + i]));
    return err / scale;
}

const Case kCases[] = {
    {2, 24, 4, 6, 8, 12, 4},    // six blocks, two codes never used
    {2, 22, 4, 6, 8, 12, 6},    // the last block partial
    {1, 7, 8, 5, 4, 6, 5},      // one partial block: no previous block, no cache
    {3, 37, 5, 3, 6, 10, 3},    // many blocks, few codes
    {2, 33, 16, 9, 16, 24, 7},  // block longer than the window of the first ones
};

// Both reductions (the cache carried block by block, or every block's made at once), each with
// sequences across the threads (B >= threads) and with one sequence's blocks across them.
TEST(VqAttention, LinearTimeEqualsQuadraticForwardAndBackward) {
    for (const kn::VqReduction red : kReductions)
        for (const Case& c : kCases) {
            SCOPED_TRACE(name(red));
            const Inputs in = make(c, 100 + c.T);
            const std::size_t N = static_cast<std::size_t>(c.B) * c.T;
            std::vector<float> out(N * c.dv, NAN), lse(N, NAN);
            kn::vq_attention_forward(out.data(), lse.data(), in.q.data(), c.dk, in.z.data(),
                                     in.v.data(), c.dv, in.codebook.data(), in.rel.data(),
                                     in.u.data(), in.vb.data(), c.B, c.T, shape(c, red), nullptr);
            std::vector<float> dq(N * c.dk, NAN), dk(N * c.dk, NAN), dv(N * c.dv, NAN);
            std::vector<float> du(c.dk, 0.5f), dvb(c.dk, 0.5f), drel((c.L + 1) * c.dk, 0.5f);
            kn::vq_attention_backward(dq.data(), dk.data(), dv.data(), du.data(), dvb.data(),
                                      drel.data(), in.dout.data(), out.data(), lse.data(),
                                      in.q.data(), c.dk, in.z.data(), in.v.data(), c.dv,
                                      in.codebook.data(), in.rel.data(), in.u.data(), in.vb.data(),
                                      c.B, c.T, shape(c, red), nullptr);
            std::vector<double> du_ref(c.dk, 0.5), dvb_ref(c.dk, 0.5), drel_ref(drel.size(), 0.5);
            for (int b = 0; b < c.B; ++b) {
                const Quadratic r = quadratic(in, b);
                const std::size_t row = static_cast<std::size_t>(b) * c.T;
                SCOPED_TRACE(::testing::Message()
                             << "T " << c.T << " L " << c.L << " S " << c.S << " row " << b);
                EXPECT_LT(rel_err(out.data() + row * c.dv, r.out, r.out.size()), 2e-6);
                EXPECT_LT(rel_err(dq.data() + row * c.dk, r.dq, r.dq.size()), 2e-5);
                EXPECT_LT(rel_err(dk.data() + row * c.dk, r.dk, r.dk.size()), 2e-5);
                EXPECT_LT(rel_err(dv.data() + row * c.dv, r.dv, r.dv.size()), 2e-5);
                for (int d = 0; d < c.dk; ++d) du_ref[d] += r.du[d], dvb_ref[d] += r.dvb[d];
                for (std::size_t i = 0; i < drel.size(); ++i) drel_ref[i] += r.drel[i];
            }
            EXPECT_LT(rel_err(du.data(), du_ref, du.size()), 2e-5);
            EXPECT_LT(rel_err(dvb.data(), dvb_ref, dvb.size()), 2e-5);
            EXPECT_LT(rel_err(drel.data(), drel_ref, drel.size()), 2e-5);
        }
}

// Feeds one sequence in pieces of the given lengths, carrying the state.
std::vector<float> in_pieces(const Inputs& in, const std::vector<int>& pieces,
                             kn::VqAttnState& st) {
    const Case& c = in.c;
    std::vector<float> out(static_cast<std::size_t>(c.T) * c.dv), lse(c.T);
    int at = 0;
    for (int n : pieces) {
        kn::vq_attention_forward(
            out.data() + static_cast<std::size_t>(at) * c.dv, lse.data() + at,
            in.q.data() + static_cast<std::size_t>(at) * c.dk, c.dk, in.z.data() + at,
            in.v.data() + static_cast<std::size_t>(at) * c.dv, c.dv, in.codebook.data(),
            in.rel.data(), in.u.data(), in.vb.data(), 1, n, shape(c), &st);
        at += n;
        // Constant size: at most 2L - 1 window tokens, S counts and means.
        EXPECT_LT(st.z.size(), static_cast<std::size_t>(2 * c.L));
        EXPECT_EQ(st.v.size(), st.z.size() * c.dv);
        EXPECT_EQ(st.pos, at);
    }
    return out;
}

TEST(VqAttention, PiecesCarryingTheStateEqualOneCall) {
    const Case c{1, 41, 4, 6, 8, 12, 5};
    const Inputs in = make(c, 7);
    kn::VqAttnState whole_state;
    const std::vector<float> whole = in_pieces(in, {c.T}, whole_state);
    const std::vector<std::vector<int>> cuts = {
        std::vector<int>(c.T, 1),           // token by token: decoding
        {4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 1},  // block by block
        {3, 7, 1, 13, 2, 15},               // anywhere
    };
    for (const auto& cut : cuts) {
        kn::VqAttnState st;
        const std::vector<float> out = in_pieces(in, cut, st);
        double err = 0, scale = 0;
        for (std::size_t i = 0; i < out.size(); ++i)
            err = std::max(err, static_cast<double>(std::fabs(out[i] - whole[i]))),
            scale = std::max(scale, static_cast<double>(std::fabs(whole[i])));
        EXPECT_LT(err / scale, 2e-6) << cut.size() << " pieces";
        EXPECT_EQ(st.z, whole_state.z);
        for (std::size_t i = 0; i < st.mean.size(); ++i)
            ASSERT_NEAR(st.mean[i], whole_state.mean[i], 1e-5f);
        EXPECT_EQ(st.count, whole_state.count);
    }
}

TEST(VqAttention, BackwardFromACarriedStateMatchesQuadraticOverTheWholeText) {
    // The first 13 tokens go in as state (no gradient); gradients of the last 20 through
    // queries that see everything.
    const Case c{1, 33, 4, 5, 8, 12, 5};
    for (const kn::VqReduction red : kReductions) {
        SCOPED_TRACE(name(red));
        const Inputs in = make(c, 21);
        const int first = 13, n = c.T - first;
        kn::VqAttnState st;
        std::vector<float> out0(static_cast<std::size_t>(first) * c.dv), lse0(first);
        kn::vq_attention_forward(out0.data(), lse0.data(), in.q.data(), c.dk, in.z.data(),
                                 in.v.data(), c.dv, in.codebook.data(), in.rel.data(), in.u.data(),
                                 in.vb.data(), 1, first, shape(c), &st);
        const kn::VqAttnState start = st;
        const float* q = in.q.data() + static_cast<std::size_t>(first) * c.dk;
        const float* v = in.v.data() + static_cast<std::size_t>(first) * c.dv;
        const std::int32_t* z = in.z.data() + first;
        std::vector<float> out(static_cast<std::size_t>(n) * c.dv), lse(n);
        kn::vq_attention_forward(out.data(), lse.data(), q, c.dk, z, v, c.dv, in.codebook.data(),
                                 in.rel.data(), in.u.data(), in.vb.data(), 1, n, shape(c, red),
                                 &st);
        std::vector<float> dq(static_cast<std::size_t>(n) * c.dk), dk(dq.size()),
            dv(static_cast<std::size_t>(n) * c.dv), du(c.dk, 0.f), dvb(c.dk, 0.f),
            drel((c.L + 1) * c.dk, 0.f);
        kn::vq_attention_backward(
            dq.data(), dk.data(), dv.data(), du.data(), dvb.data(), drel.data(),
            in.dout.data() + static_cast<std::size_t>(first) * c.dv, out.data(), lse.data(), q,
            c.dk, z, v, c.dv, in.codebook.data(), in.rel.data(), in.u.data(), in.vb.data(), 1, n,
            shape(c, red), &start);
        const Quadratic r = quadratic(in, 0, first, first);
        EXPECT_LT(rel_err(out.data(), r.out, out.size(), static_cast<std::size_t>(first) * c.dv),
                  2e-6);
        EXPECT_LT(rel_err(dq.data(), r.dq, dq.size(), static_cast<std::size_t>(first) * c.dk),
                  2e-5);
        EXPECT_LT(rel_err(dk.data(), r.dk, dk.size(), static_cast<std::size_t>(first) * c.dk),
                  2e-5);
        EXPECT_LT(rel_err(dv.data(), r.dv, dv.size(), static_cast<std::size_t>(first) * c.dv),
                  2e-5);
        EXPECT_LT(rel_err(du.data(), r.du, du.size()), 2e-5);
        EXPECT_LT(rel_err(dvb.data(), r.dvb, dvb.size()), 2e-5);
        EXPECT_LT(rel_err(drel.data(), r.drel, drel.size()), 2e-5);
    }
}

TEST(VqAttention, IsCausal) {
    // Changing the query, code or value at position t changes no output before t, and does
    // change outputs from t on (the Jacobian is lower-triangular and not zero).
    const Case c{1, 29, 4, 6, 8, 12, 6};
    const Inputs base = make(c, 3);
    auto run = [&](const Inputs& in) {
        std::vector<float> out(static_cast<std::size_t>(c.T) * c.dv), lse(c.T);
        kn::vq_attention_forward(out.data(), lse.data(), in.q.data(), c.dk, in.z.data(),
                                 in.v.data(), c.dv, in.codebook.data(), in.rel.data(), in.u.data(),
                                 in.vb.data(), 1, c.T, shape(c), nullptr);
        return out;
    };
    const std::vector<float> ref = run(base);
    for (int t : {0, 5, 13, 28}) {
        Inputs in = base;
        in.q[static_cast<std::size_t>(t) * c.dk] += 0.5f;
        in.v[static_cast<std::size_t>(t) * c.dv] += 0.5f;
        in.z[t] = (in.z[t] + 1) % c.S;
        const std::vector<float> out = run(in);
        for (int i = 0; i < t; ++i)
            for (int d = 0; d < c.dv; ++d)
                ASSERT_EQ(out[static_cast<std::size_t>(i) * c.dv + d],
                          ref[static_cast<std::size_t>(i) * c.dv + d])
                    << "position " << i << " saw position " << t;
        double changed = 0;
        for (int d = 0; d < c.dv; ++d)
            changed += std::fabs(out[static_cast<std::size_t>(t) * c.dv + d] -
                                 ref[static_cast<std::size_t>(t) * c.dv + d]);
        EXPECT_GT(changed, 1e-4) << "position " << t;
    }
}

TEST(VqAttention, QuantizeFindsTheNearestCode) {
    const int N = 150, S = 37, dk = 12;
    const std::vector<float> k = randn(static_cast<std::size_t>(N) * dk, 5);
    const std::vector<float> cb = randn(static_cast<std::size_t>(S) * dk, 6);
    std::vector<std::int32_t> z(N, -1);
    std::vector<float> err(N, NAN);
    kn::vq_quantize(z.data(), err.data(), k.data(), dk, cb.data(), N, S, dk);
    for (int n = 0; n < N; ++n) {
        int best = 0;
        double bd = 1e300;
        for (int s = 0; s < S; ++s) {
            double d = 0;
            for (int j = 0; j < dk; ++j) {
                const double x = k[n * dk + j] - cb[s * dk + j];
                d += x * x;
            }
            if (d < bd) bd = d, best = s;
        }
        EXPECT_EQ(z[n], best) << "row " << n;
        EXPECT_NEAR(err[n], bd, 1e-5 * bd);
    }
}

}  // namespace
}  // namespace meshlm::test
