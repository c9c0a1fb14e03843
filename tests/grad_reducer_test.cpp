// GradReducer starts each reported range's all-reduce at once (during backward, when driven by
// the transformer's block hook) and covers exactly the rest of the buffer in finish(): a recording
// Comm of size 2 shows which ranges started when.
#include <gtest/gtest.h>

#include <algorithm>

#include "meshlm/core/buffer.h"
#include "meshlm/core/rng.h"
#include "meshlm/model/transformer.h"
#include "meshlm/model/transformer_layout.h"
#include "meshlm/parallel/grad_reducer.h"

namespace meshlm {
namespace {

// A size-2 communicator that records the byte range of every all-reduce it is asked to start
// and completes it as a no-op.
class RecordingComm : public Comm {
  public:
    explicit RecordingComm(const float* base) : base_(base) {}
    int rank() const override { return 0; }
    int size() const override { return 2; }
    const char* backend() const override { return "recording"; }
    void barrier() override {}
    std::unique_ptr<Comm> split(int, int) override { return nullptr; }
    [[noreturn]] void abort(int code) override { std::exit(code); }
    CommRequest start_all_reduce(void* buf, std::size_t n, CommType, ReduceOp) override {
        const auto lo = static_cast<std::size_t>(static_cast<const float*>(buf) - base_);
        started.emplace_back(lo, lo + n);
        return {};
    }
    CommRequest start_reduce_scatter(const void*, void*, std::size_t, std::span<const std::size_t>,
                                     CommType) override {
        return {};
    }
    CommRequest start_all_gather(void*, std::size_t, std::span<const std::size_t>,
                                 CommType) override {
        return {};
    }
    CommRequest start_broadcast(void*, std::size_t, CommType, int) override { return {}; }

    std::vector<std::pair<std::size_t, std::size_t>> started;

  private:
    const float* base_;
};

TEST(GradReducer, StartsBlocksDuringBackwardAndCoversTheRestAtTheEnd) {
    ModelConfig cfg;
    cfg.n_layer = 3, cfg.d_model = 32, cfg.n_head = 2, cfg.vocab_size = 50, cfg.max_seq_len = 8;
    Transformer model(cfg, 2, 8);
    const ParamLayout& layout = model.layout();
    Buffer<float> params(layout.total()), grads(layout.total());
    init_params(cfg, layout, params.data(), 1);
    RecordingComm comm(grads.data());
    GradReducer reducer(comm, 1000);  // buckets of 1000 floats
    reducer.begin(grads.data(), grads.size());

    std::vector<std::size_t> started_before_block;  // all-reduces started when block l began
    model.set_block_backward_hook([&](int layer) {
        std::size_t lo = layout.total(), hi = 0;
        for (const auto& s : layout.slices())
            if (s.layer == layer)
                lo = std::min(lo, s.offset), hi = std::max(hi, s.offset + s.numel);
        reducer.ready(lo, hi);
        started_before_block.push_back(comm.started.size());
    });
    std::vector<std::int32_t> tokens(16, 3), targets(16, 4);
    model.forward(params.data(), tokens.data(), targets.data(), 2, 8, 1.f / 16);
    model.backward(params.data(), grads.data());
    // Every block's reductions were already started inside backward, growing block by block.
    ASSERT_EQ(started_before_block.size(), 3u);
    EXPECT_GT(started_before_block[0], 0u);
    EXPECT_LT(started_before_block[0], started_before_block[1]);
    EXPECT_LT(started_before_block[1], started_before_block[2]);
    reducer.finish();
    // Together the started ranges tile the buffer exactly once, in buckets of <= 1000 floats.
    auto ranges = comm.started;
    std::sort(ranges.begin(), ranges.end());
    std::size_t at = 0;
    for (const auto& [lo, hi] : ranges) {
        EXPECT_EQ(lo, at);
        EXPECT_LE(hi - lo, 1000u);
        at = hi;
    }
    EXPECT_EQ(at, grads.size());
}

}  // namespace
}  // namespace meshlm
