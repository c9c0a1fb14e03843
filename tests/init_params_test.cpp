// Parameter init draws element j of a tensor as draw j of the tensor's own Philox stream, so the
// draws can be split over threads: the result must not depend on the thread count and must
// equal the serial definition, written out here one draw at a time.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "meshlm/core/buffer.h"
#include "meshlm/core/rng.h"
#include "meshlm/core/threads.h"
#include "meshlm/kernels/kernels.h"
#include "meshlm/model/transformer_layout.h"

namespace meshlm {
namespace {

ModelConfig model() {
    ModelConfig m;  // GPT-2 defaults; the embedding (300 x 256) spans two 64k-draw chunks
    m.n_layer = 2, m.d_model = 256, m.n_head = 4, m.vocab_size = 300, m.max_seq_len = 64;
    return m;
}

std::vector<float> init_with(int threads, const ModelConfig& m, const ParamLayout& l,
                             std::size_t begin, std::size_t end) {
    const int before = thread_count();
    set_thread_count(threads);
    std::vector<float> p(end - begin);
    init_params(m, l, 1, 0, p.data(), 17, begin, end);
    set_thread_count(before);
    return p;
}

TEST(InitParams, SameOnAnyThreadCountAsTheSerialDefinition) {
    const ModelConfig m = model();
    const ParamLayout l = transformer_layout(m);
    const std::vector<float> one = init_with(1, m, l, 0, l.total());
    const std::vector<float> two = init_with(2, m, l, 0, l.total());
    const std::vector<float> three = init_with(3, m, l, 0, l.total());
    ASSERT_EQ(std::memcmp(one.data(), two.data(), one.size() * sizeof(float)), 0);
    ASSERT_EQ(std::memcmp(one.data(), three.data(), one.size() * sizeof(float)), 0);
    int normal_tensors = 0;
    for (const ParamSlice& s : l.slices()) {
        if (s.init != InitRule::normal) continue;
        ++normal_tensors;
        Philox rng(17, 0x1000 + static_cast<std::uint64_t>(s.index));
        for (std::size_t j = 0; j < s.numel; ++j)
            ASSERT_EQ(one[s.offset + j], s.init_std * rng.normal()) << s.name << " element " << j;
    }
    EXPECT_GE(normal_tensors, 5);
    EXPECT_GT(l.at("wte.weight").numel, std::size_t{1} << 16);  // more than one chunk
}

TEST(InitParams, ARangeStartingMidTensorDrawsThatTensorsElements) {
    // ZeRO-3 inits each rank's chunk only; a chunk boundary inside a tensor must continue its
    // stream at the right draw.
    const ModelConfig m = model();
    const ParamLayout l = transformer_layout(m);
    const std::vector<float> whole = init_with(2, m, l, 0, l.total());
    const std::size_t begin = l.at("wte.weight").offset + 70001, end = l.total() - 999;
    const std::vector<float> part = init_with(2, m, l, begin, end);
    ASSERT_EQ(std::memcmp(part.data(), whole.data() + begin, part.size() * sizeof(float)), 0);
}

}  // namespace
}  // namespace meshlm
