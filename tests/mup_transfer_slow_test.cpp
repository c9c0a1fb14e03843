// muP's learning-rate transfer (seed 002), small: bench/mup_sweep.sh at widths 32 and 128 and
// learning rates 2^-9, 2^-6, 2^-3, 100 steps each on the fortunes corpus, once under muP and
// once under the standard parameterization. muP's best rate must be the same at both widths (and
// the wider model better at it); SP's best rate must move with the width. Measured when written
// (2-core AVX2, ~1 minute for both sweeps), final validation loss:
//   muP  32: 3.3081 2.7625* 3.0890   128: 3.2279 2.6037* 2.7916
//   SP   32: 3.2140 3.0443* 3.0730   128: 2.6196* 2.8493 3.3522
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "test_util.h"

namespace meshlm {
namespace {

// width -> (log2 lr -> final validation loss), from the sweep's results.csv.
using Table = std::map<int, std::map<int, double>>;

Table sweep(const std::string& param, const std::string& out) {
    const std::string cmd = "MESHLM_BIN=" + test::meshlm_binary() + " " + test::source_dir() +
                            "/bench/mup_sweep.sh --param " + param +
                            " --widths 32,128 --log2-lrs -9,-6,-3 --steps 100 --jobs 2 --out " +
                            out + " -- --config.train.final_eval_batches=20";
    const auto r = test::run_command(cmd);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    std::ifstream in(out + "/results.csv");
    Table t;
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
        std::istringstream s(line);
        std::string w, l, v;
        std::getline(s, w, ','), std::getline(s, l, ','), std::getline(s, v, ',');
        t[std::stoi(w)][std::stoi(l)] = v == "nan" ? 1e9 : std::stod(v);
    }
    return t;
}

int best(const std::map<int, double>& losses) {
    auto it = losses.begin();
    for (auto j = losses.begin(); j != losses.end(); ++j)
        if (j->second < it->second) it = j;
    return it->first;
}

TEST(MupTransfer, MupsBestRateHoldsAcrossWidthsAndSpsMoves) {
    if (!std::filesystem::exists("/usr/share/games/fortunes"))
        GTEST_FAIL()
            << "the default corpus is missing: apt-get install fortunes (scripts/setup.sh)";
    const std::string dir = test::temp_dir("mup_transfer");
    const Table mup = sweep("mup", dir + "/mup"), sp = sweep("sp", dir + "/sp");
    ASSERT_EQ(mup.size(), 2u);
    ASSERT_EQ(sp.size(), 2u);
    for (const Table* t : {&mup, &sp})
        for (const auto& [w, losses] : *t) ASSERT_EQ(losses.size(), 3u) << "width " << w;
    const int mup32 = best(mup.at(32)), mup128 = best(mup.at(128));
    EXPECT_EQ(mup32, mup128) << "muP's best log2 lr moved with the width";
    EXPECT_LT(mup.at(128).at(mup32), mup.at(32).at(mup32)) << "muP: wider is not better";
    EXPECT_NE(best(sp.at(32)), best(sp.at(128))) << "SP's best log2 lr did not move";
    std::printf("best log2 lr: muP %d, %d; SP %d, %d\n", mup32, mup128, best(sp.at(32)),
                best(sp.at(128)));
}

}  // namespace
}  // namespace meshlm
