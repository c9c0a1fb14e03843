// Staged sequence-length warmup (train.seq_warmup_steps / seq_warmup_len, seed 000): the step
// at which each length starts, the batches the loader hands out at those shapes (each warm step
// holds exactly the tokens of the full-length step, cut into shorter rows), the tokens per step,
// and the trainer training at those lengths (the seq_len it logs per step).
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "meshlm/data/loader.h"
#include "meshlm/data/prepare.h"
#include "meshlm/data/tokenizer.h"
#include "meshlm/train/seq_warmup.h"
#include "test_util.h"

namespace meshlm {
namespace {

TrainConfig warmup(int steps, int len) {
    TrainConfig tc;
    tc.batch_size = 4, tc.seq_len = 32, tc.seq_warmup_steps = steps, tc.seq_warmup_len = len;
    return tc;
}

TEST(SeqWarmup, EachLengthStartsAtItsStepWithTheSameTokens) {
    const TrainConfig tc = warmup(5, 8);
    for (long step = 0; step < 9; ++step) {
        const StepShape s = step_shape(tc, step);
        // Steps 0..4 (the first five) at 8 tokens: 4 * 32 / 8 = 16 rows; then 4 rows of 32.
        EXPECT_EQ(s.len, step < 5 ? 8 : 32) << "step " << step;
        EXPECT_EQ(s.rows, step < 5 ? 16 : 4) << "step " << step;
        EXPECT_EQ(s.rows * s.len, 128) << "tokens of step " << step;
    }
    const TrainConfig off = warmup(0, 0);
    EXPECT_EQ(step_shape(off, 0).len, 32);
    EXPECT_EQ(step_shape(off, 0).rows, 4);
}

std::string prepared(const std::string& tag) {
    const std::string dir = test::temp_dir(tag);
    std::string in;
    for (int i = 0; i < 80; ++i)
        in += "{\"text\": \"document " + std::to_string(i) + " " +
              std::string(i % 23, 'a' + i % 26) + "\"}\n";
    std::ofstream(dir + "/in.jsonl") << in;
    ByteTokenizer tok;
    PrepareOptions opt;
    opt.progress = false;
    opt.shard_tokens = 300;
    prepare_corpus({dir + "/in.jsonl"}, opt, tok, dir + "/out");
    return dir + "/out";
}

// The trainer's loader calls over 8 steps against a loader always at full length: a warm step's
// rows, read in order, are the full step's rows cut in four, tokens and targets alike.
TEST(SeqWarmup, TheLoaderHandsOutTheFullStepsTokensInShorterRows) {
    const std::string dir = prepared("seqwarm");
    LoaderOptions o;
    o.seq_len = 32, o.seed = 3;
    auto warm = DataLoader::open_split(dir, "train", o);
    auto full = DataLoader::open_split(dir, "train", o);
    const TrainConfig tc = warmup(5, 8);
    for (long step = 0; step < 8; ++step) {
        const StepShape s = step_shape(tc, step);
        std::vector<std::int32_t> wt(s.rows * s.len), wg(wt.size()), ft(128), fg(128);
        warm->next_batch(s.rows, s.len, wt.data(), wg.data());
        full->next_batch(4, 32, ft.data(), fg.data());
        ASSERT_EQ(wt.size(), 128u) << "step " << step;
        EXPECT_EQ(wt, ft) << "tokens of step " << step;
        EXPECT_EQ(wg, fg) << "targets of step " << step;
    }
    EXPECT_EQ(warm->state(), full->state());
}

TEST(SeqWarmup, TheTrainerTrainsEachStepAtItsLength) {
    const std::string run = test::temp_dir("seqwarm_run") + "/run";
    const auto r = test::run_command(
        test::meshlm_binary() +
        " train --config.model.n_layer=1 --config.model.d_model=32 --config.model.n_head=2"
        " --config.model.max_seq_len=32 --config.train.seq_len=32 --config.train.batch_size=2"
        " --config.train.steps=7 --config.train.seq_warmup_steps=4"
        " --config.train.seq_warmup_len=8 --config.train.threads=2 --config.log.interval=1"
        " --config.log.eval_interval=0 --config.log.sample_tokens=0"
        " --config.checkpoint.interval=0 --config.train.final_eval_batches=1"
        " --config.data.synthetic=true --config.log.dir=" +
        run);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const std::string text = test::read_file(run + "/metrics.jsonl");
    std::regex re("\"step\": ([0-9]+),.*\"seq_len\": ([0-9]+)");
    std::vector<int> lens;
    for (std::sregex_iterator it(text.begin(), text.end(), re), end; it != end; ++it) {
        EXPECT_EQ(std::stoi((*it)[1].str()), static_cast<int>(lens.size()) + 1);
        lens.push_back(std::stoi((*it)[2].str()));
    }
    // Logged steps are 1-based: steps 1..4 are the warmup's.
    EXPECT_EQ(lens, (std::vector<int>{8, 8, 8, 8, 32, 32, 32})) << text;
}

}  // namespace
}  // namespace meshlm
