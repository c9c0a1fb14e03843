// The transformer's block backward hook fires from the last block down, once per block, at a moment
// when that block's gradients already hold their final values (data parallelism reduces them then).
#include <gtest/gtest.h>

#include <vector>

#include "meshlm/core/buffer.h"
#include "meshlm/core/rng.h"
#include "meshlm/model/transformer.h"
#include "meshlm/model/transformer_layout.h"

namespace meshlm {
namespace {

TEST(Gpt2BlockHook, FiresPerBlockWithFinalGradients) {
    ModelConfig cfg;
    cfg.n_layer = 3, cfg.d_model = 32, cfg.n_head = 2, cfg.vocab_size = 50, cfg.max_seq_len = 16;
    const int B = 2, T = 16;
    Transformer model(cfg, B, T);
    const ParamLayout& layout = model.layout();
    Buffer<float> params(layout.total()), grads(layout.total());
    init_params(cfg, layout, params.data(), 7);
    std::vector<std::int32_t> tokens(B * T), targets(B * T);
    Philox rng(3, 0);
    for (int i = 0; i < B * T; ++i) {
        tokens[i] = static_cast<std::int32_t>(rng.below(50));
        targets[i] = static_cast<std::int32_t>(rng.below(50));
    }
    std::vector<int> order;
    std::vector<std::vector<float>> at_hook(cfg.n_layer);
    model.set_block_backward_hook([&](int layer) {
        order.push_back(layer);
        for (const auto& s : layout.slices())
            if (s.layer == layer)
                at_hook[layer].insert(at_hook[layer].end(), grads.data() + s.offset,
                                      grads.data() + s.offset + s.numel);
    });
    model.forward(params.data(), tokens.data(), targets.data(), B, T, 1.f / (B * T));
    model.backward(params.data(), grads.data());
    EXPECT_EQ(order, (std::vector<int>{2, 1, 0}));
    for (int layer = 0; layer < cfg.n_layer; ++layer) {
        std::vector<float> final_grads;
        for (const auto& s : layout.slices())
            if (s.layer == layer)
                final_grads.insert(final_grads.end(), grads.data() + s.offset,
                                   grads.data() + s.offset + s.numel);
        ASSERT_FALSE(final_grads.empty());
        EXPECT_EQ(at_hook[layer], final_grads) << "layer " << layer;
        float nonzero = 0;
        for (float g : final_grads) nonzero = std::max(nonzero, std::abs(g));
        EXPECT_GT(nonzero, 0.f) << "layer " << layer;
    }
}

}  // namespace
}  // namespace meshlm
