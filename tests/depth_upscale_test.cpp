// Depth up-scaling (model.init_from_layers, seed 000's warm start): a deeper model starts with
// block l equal to the source's block map[l], bitwise, and everything outside the blocks equal to
// the source's; bad maps are refused with a message before anything is written.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "meshlm/io/init_from.h"
#include "meshlm/io/weights.h"
#include "meshlm/model/transformer_layout.h"
#include "test_util.h"

namespace fs = std::filesystem;

namespace meshlm {
namespace {

// A tiny GPT-2 (configs/tiny-gpt2.yaml, the option table's defaults; `meshlm train` without
// --config trains the default run's recipe, a Transformer-VQ).
const std::string kFlags =
    " --config " + test::source_dir() + "/configs/tiny-gpt2.yaml" +
    " --config.model.d_model=32 --config.model.n_head=2 --config.model.max_seq_len=32"
    " --config.train.seq_len=32 --config.train.batch_size=2 --config.train.steps=3"
    " --config.log.eval_interval=0 --config.log.sample_tokens=0 --config.checkpoint.interval=0"
    " --config.train.final_eval_batches=1 --config.data.synthetic=true";

class DepthUpscale : public ::testing::Test {
  protected:
    void SetUp() override {
        dir_ = test::temp_dir("upscale");
        const auto r =
            test::run_command(test::meshlm_binary() + " train" + kFlags +
                              " --config.model.n_layer=2 --config.log.dir=" + dir_ + "/src");
        ASSERT_EQ(r.exit_code, 0) << r.output;
    }
    test::CommandResult grow(const std::string& extra) {
        return test::run_command(test::meshlm_binary() + " train" + kFlags +
                                 " --config.model.init_from=" + dir_ + "/src" + extra +
                                 " --config.log.dir=" + dir_ + "/dst");
    }
    std::string dir_;
};

TEST_F(DepthUpscale, BlocksComeFromTheMappedSourceBlocks) {
    ModelConfig src;
    src.d_model = 32, src.n_head = 2, src.max_seq_len = 32, src.n_layer = 2;
    const ParamLayout src_layout = transformer_layout(src);
    std::vector<float> source(src_layout.total());
    load_weights(dir_ + "/src/model.safetensors", src_layout, source.data());

    ModelConfig deep = src;
    deep.n_layer = 5, deep.init_from = dir_ + "/src", deep.init_from_layers = "0,0,1,1,0";
    const std::vector<int> map = {0, 0, 1, 1, 0};
    const ParamLayout layout = transformer_layout(deep);
    std::vector<float> got(layout.total(), -7.f);
    EXPECT_EQ(init_source_layers(deep.init_from), 2);
    load_init_weights(deep.init_from, deep, layout, got.data());
    int blocks = 0, others = 0;
    for (const ParamSlice& s : layout.slices()) {
        std::string name = s.name;
        if (s.layer >= 0) {
            name.replace(0, ("h." + std::to_string(s.layer)).size(),
                         "h." + std::to_string(map[s.layer]));
            ++blocks;
        } else {
            ++others;
        }
        const ParamSlice* from = src_layout.find(name);
        ASSERT_NE(from, nullptr) << name;
        EXPECT_TRUE(std::equal(got.begin() + s.offset, got.begin() + s.offset + s.numel,
                               source.begin() + from->offset))
            << s.name << " should equal the source's " << name;
    }
    EXPECT_GT(blocks, 0);
    EXPECT_GT(others, 0);
    // The two source blocks differ, so a wrong map could not pass.
    const ParamSlice *a = src_layout.find("h.0.attn.c_attn.weight"),
                     *b = src_layout.find("h.1.attn.c_attn.weight");
    EXPECT_FALSE(std::equal(source.begin() + a->offset, source.begin() + a->offset + a->numel,
                            source.begin() + b->offset));
}

TEST_F(DepthUpscale, TrainsFromTheGrownModelAndRefusesBadMaps) {
    auto ok = grow(" --config.model.n_layer=4 --config.model.init_from_layers=0,0,1,1");
    ASSERT_EQ(ok.exit_code, 0) << ok.output;
    EXPECT_NE(ok.output.find("blocks 0,0,1,1"), std::string::npos) << ok.output;
    fs::remove_all(dir_ + "/dst");
    const std::pair<std::string, std::string> bad[] = {
        {" --config.model.n_layer=4 --config.model.init_from_layers=0,0,2,1",
         "'2' is not a block of the source (0..1)"},
        {" --config.model.n_layer=4 --config.model.init_from_layers=0,1",
         "lists 2 blocks but model.n_layer is 4"},
        {" --config.model.n_layer=4 --config.model.init_from_layers=0,x,1,1",
         "'x' is not a block of the source"},
        {" --config.model.n_layer=4",
         "grow the depth by mapping blocks with model.init_from_layers"},
        {" --config.model.n_layer=4 --config.model.d_model=64 "
         "--config.model.init_from_layers=0,0,1,1",
         "model.d_model: 32"},
    };
    for (const auto& [flags, message] : bad) {
        auto r = grow(flags);
        EXPECT_EQ(r.exit_code, 2) << flags << "\n" << r.output;
        EXPECT_NE(r.output.find(message), std::string::npos) << flags << "\n" << r.output;
        EXPECT_FALSE(fs::exists(dir_ + "/dst")) << flags;
    }
    auto orphan = test::run_command(
        test::meshlm_binary() + " train" + kFlags +
        " --config.model.init_from_layers=0,0 --config.log.dir=" + dir_ + "/orphan");
    EXPECT_EQ(orphan.exit_code, 2) << orphan.output;
    EXPECT_NE(orphan.output.find("set model.init_from too"), std::string::npos) << orphan.output;
}

}  // namespace
}  // namespace meshlm
