// Adafactor against optax.adafactor itself (tools/reference/optimizer_reference.py runs it in
// float64 with JAX): two factored matrices (one of each orientation), a small unfactored matrix
// and a vector, step by step, at seed 001's settings and at others. And the sharded update: the
// flat buffer cut into ZeRO-like chunks through rows and tensors, one optimizer per chunk adding
// its per-tensor sums to the others' (threads standing in for ranks), gives what one optimizer
// over the whole buffer gives.
#include <gtest/gtest.h>

#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "meshlm/io/safetensors.h"
#include "meshlm/kernels/kernels.h"
#include "meshlm/optim/optimizer.h"
#include "test_util.h"

namespace meshlm {
namespace {

std::vector<std::string> split(const std::string& s) {
    std::vector<std::string> out;
    std::stringstream in(s);
    for (std::string x; std::getline(in, x, ',');) out.push_back(x);
    return out;
}

// A tensor of the fixture seen as rows x cols, with its gradient rule (see the script).
struct FixtureTensor {
    std::string name;
    Shape shape;
    std::int64_t rows, cols;
    std::vector<float> G, a, b;  // base [rows, cols]; weights [steps, rows], [steps, cols]

    // g_t = f32(a_t[i] G[i, j] + b_t[j] G[(i + 1) % rows, j]), each product rounded to double
    // apart (no fused multiply-add), as numpy computes it.
    std::vector<float> grad(int t) const {
        std::vector<float> g(G.size());
        for (std::int64_t i = 0; i < rows; ++i)
            for (std::int64_t j = 0; j < cols; ++j) {
                volatile double x = static_cast<double>(a[t * rows + i]) * G[i * cols + j];
                volatile double y =
                    static_cast<double>(b[t * cols + j]) * G[((i + 1) % rows) * cols + j];
                g[i * cols + j] = static_cast<float>(x + y);
            }
        return g;
    }
    std::vector<float> p0() const {  // 8 G[(i + 1) % rows, (j + 1) % cols]
        std::vector<float> p(G.size());
        for (std::int64_t i = 0; i < rows; ++i)
            for (std::int64_t j = 0; j < cols; ++j)
                p[i * cols + j] = 8.f * G[((i + 1) % rows) * cols + (j + 1) % cols];
        return p;
    }
};

struct Fixture {
    SafetensorsFile f{test::fixture("adafactor_steps.safetensors")};
    int steps = std::stoi(f.metadata().at("steps")), cases = std::stoi(f.metadata().at("cases"));
    std::vector<FixtureTensor> tensors;
    ParamLayout layout;

    Fixture() {
        for (const std::string& name : split(f.metadata().at("tensors"))) {
            FixtureTensor t;
            t.name = name, t.shape = f.entry("G_" + name).shape;
            t.rows = t.shape[0], t.cols = t.shape.ndim == 2 ? t.shape[1] : 1;
            t.G = f.f32("G_" + name), t.a = f.f32("a_" + name), t.b = f.f32("b_" + name);
            tensors.push_back(t);
            layout.add(name, t.shape, -1);
        }
    }
    OptimConfig config(int k) const {
        const auto h = f.f32("hyper_" + std::to_string(k));
        OptimConfig cfg;
        cfg.name = "adafactor", cfg.lr = h[0], cfg.weight_decay = 0.f;
        cfg.adafactor_decay_rate = h[1], cfg.adafactor_clipping_threshold = h[2];
        cfg.adafactor_multiply_by_parameter_scale = h[3] != 0.f;
        return cfg;
    }
    std::vector<float> start() const {
        std::vector<float> p(layout.total(), 0.f);
        for (std::size_t i = 0; i < tensors.size(); ++i) {
            const auto x = tensors[i].p0();
            std::copy(x.begin(), x.end(), p.begin() + layout.slices()[i].offset);
        }
        return p;
    }
    std::vector<float> grads(int t) const {
        std::vector<float> g(layout.total(), 0.f);
        for (std::size_t i = 0; i < tensors.size(); ++i) {
            const auto x = tensors[i].grad(t);
            std::copy(x.begin(), x.end(), g.begin() + layout.slices()[i].offset);
        }
        return g;
    }
};

// Max |got - want| / (floor + |want|) over a reference row (`want`, every stride-th element).
double max_rel(const float* got, std::size_t stride, const float* want, std::size_t n,
               double floor) {
    double m = 0;
    for (std::size_t i = 0; i < n; ++i)
        m = std::max(m, std::fabs(got[i * stride] - want[i]) / (floor + std::fabs(want[i])));
    return m;
}

TEST(Adafactor, MatchesOptaxStepByStep) {
    const Fixture fx;
    for (int k = 0; k < fx.cases; ++k) {
        const OptimConfig cfg = fx.config(k);
        const std::size_t total = fx.layout.total();
        Optimizer opt(cfg, {{0, total, false}}, total,
                      adafactor_plan(fx.layout, 1, 0, 0, total, cfg));
        EXPECT_EQ(opt.m(), nullptr);
        EXPECT_EQ(opt.v(), nullptr);  // packed: the small matrix's and the vector's elements
        // Full second moments for S and v only (96 + 33), rows and columns of A and B twice
        // (statistics, factors: 536 each), double sums of those and two per tensor.
        EXPECT_EQ(opt.state_bytes(), (96 + 33 + 2 * 536) * 4 + (536 + 2 * 4) * 8);
        EXPECT_EQ(optimizer_state_bytes(cfg, total, adafactor_plan(fx.layout, 1, 0, 0, total, cfg)),
                  opt.state_bytes());
        std::vector<float> v(total);
        ASSERT_EQ(opt.stat_tensors().size(), 4u);  // rows and columns of A and B
        std::vector<float> p = fx.start();
        double worst_p = 0, worst_v = 0;
        for (int t = 0; t < fx.steps; ++t) {
            opt.step(p.data(), fx.grads(t).data(), cfg.lr);
            opt.export_v(v.data());
            for (std::size_t i = 0; i < fx.tensors.size(); ++i) {
                const FixtureTensor& x = fx.tensors[i];
                const ParamSlice& s = fx.layout.slices()[i];
                const std::string K = std::to_string(k) + "_" + x.name;
                const auto ps = fx.f.f32("ps_" + K);
                const std::size_t n = ps.size() / fx.steps, stride = s.numel < 1024 ? 1 : 17;
                // The parameters move by lr * rms(p) * u per step, u of unit RMS: relative to
                // that scale, float32 rounding of a few operations per element.
                const double ep = max_rel(p.data() + s.offset, stride, ps.data() + t * n, n, 1.0);
                EXPECT_LT(ep, 2e-6) << "case " << k << " step " << t + 1 << " " << x.name;
                worst_p = std::max(worst_p, ep);
                if (!fx.f.has("vr_" + K)) {  // a full second moment
                    const auto want = fx.f.f32("v_" + K);
                    const double ev =
                        max_rel(v.data() + s.offset, stride, want.data() + t * n, n, 1e-30);
                    EXPECT_LT(ev, 1e-5) << "case " << k << " step " << t + 1 << " v " << x.name;
                    worst_v = std::max(worst_v, ev);
                    continue;
                }
                for (const auto& [key, kind] :
                     {std::pair{"vr_", "exp_avg_sq_row."}, {"vc_", "exp_avg_sq_col."}}) {
                    const auto want = fx.f.f32(key + K);
                    const std::size_t m = want.size() / fx.steps;
                    const StateTensor* st = nullptr;
                    for (const StateTensor& c : opt.stat_tensors())
                        if (c.name == kind + x.name) st = &c;
                    ASSERT_TRUE(st) << kind << x.name;
                    ASSERT_EQ(static_cast<std::size_t>(st->shape.numel()), m);
                    const double ev =
                        max_rel(opt.stats() + st->offset, 1, want.data() + t * m, m, 1e-30);
                    EXPECT_LT(ev, 1e-5)
                        << "case " << k << " step " << t + 1 << " " << kind << x.name;
                    worst_v = std::max(worst_v, ev);
                }
            }
        }
        std::printf(
            "adafactor vs optax, case %d: parameters max |diff| / (1 + |p|) %.3g, second "
            "moments max relative %.3g\n",
            k, worst_p, worst_v);
    }
}

// Chunks of the flat buffer as ZeRO cuts it on `ranks` ranks, each updated by its own optimizer
// on its own thread; the tensor sum adds every rank's partial sums in rank order. The result
// equals one optimizer over the whole buffer up to the order of those sums.
TEST(Adafactor, ChunkedOverRanksEqualsWhole) {
    const Fixture fx;
    const OptimConfig cfg = fx.config(0);
    const std::size_t total = fx.layout.total();
    std::vector<float> whole = fx.start();
    Optimizer one(cfg, {{0, total, false}}, total, adafactor_plan(fx.layout, 1, 0, 0, total, cfg));
    for (int t = 0; t < fx.steps; ++t) one.step(whole.data(), fx.grads(t).data(), cfg.lr);

    for (int ranks : {2, 3, 5}) {
        // Chunk bounds that cut through rows of A and B (not multiples of their widths).
        const std::size_t chunk = (total + ranks - 1) / ranks + 7;
        std::vector<float> p = fx.start();
        std::vector<std::vector<double>> partial(ranks);
        std::barrier sync(ranks);
        std::vector<std::thread> threads;
        std::vector<std::string> errors(ranks);
        for (int r = 0; r < ranks; ++r)
            threads.emplace_back([&, r] {
                try {
                    const std::size_t lo = std::min(total, r * chunk);
                    const std::size_t hi = std::min(total, lo + chunk);
                    Optimizer opt(cfg, {{0, hi - lo, false}}, hi - lo,
                                  adafactor_plan(fx.layout, 1, 0, lo, hi, cfg));
                    opt.set_tensor_sum([&, r](double* sums, std::size_t n) {
                        partial[r].assign(sums, sums + n);
                        sync.arrive_and_wait();
                        std::fill_n(sums, n, 0.0);
                        for (int q = 0; q < ranks; ++q)
                            for (std::size_t i = 0; i < n; ++i) sums[i] += partial[q][i];
                        sync.arrive_and_wait();
                    });
                    for (int t = 0; t < fx.steps; ++t) {
                        const std::vector<float> g = fx.grads(t);
                        opt.step(p.data() + lo, g.data() + lo, cfg.lr);
                    }
                } catch (const std::exception& e) {
                    errors[r] = e.what();
                }
            });
        for (auto& th : threads) th.join();
        for (int r = 0; r < ranks; ++r) ASSERT_EQ(errors[r], "") << "rank " << r;
        double worst = 0;
        for (std::size_t i = 0; i < total; ++i)
            worst = std::max(worst, std::fabs(p[i] - whole[i]) / (1.0 + std::fabs(whole[i])));
        std::printf("adafactor on %d chunks vs one: max |diff| / (1 + |p|) %.3g\n", ranks, worst);
        EXPECT_LT(worst, 1e-6) << ranks << " ranks";
    }
}

}  // namespace
}  // namespace meshlm
