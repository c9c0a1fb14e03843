// muP's coordinate check end to end (`meshlm coord-check` on the default corpus, 4 widths,
// 5 steps): under muP every site's mean |activation| at step 5 stays within 2x across widths;
// under the standard parameterization at the same learning rate the output logits (and the
// residual branches) grow with the width. The CSV, SVG and PNG are written.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.h"

namespace fs = std::filesystem;

namespace meshlm {
namespace {

const std::string kShape =
    " --widths 64,128,256,512 --steps 5 --config.model.n_layer=2 --config.model.d_model=64"
    " --config.model.n_head=2 --config.train.seq_len=64 --config.train.batch_size=8"
    " --config.model.position=rope --config.model.norm=rmsnorm --config.model.tied_head=false"
    " --config.optim.warmup_steps=0 --config.optim.schedule=constant --config.optim.lr=0.01";

// site -> value per width at `step`, blocks averaged (layer -1) and the logits.
std::map<std::string, std::map<int, double>> read_csv(const std::string& path, int step) {
    std::map<std::string, std::map<int, double>> out;
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    EXPECT_EQ(line, "width,step,site,layer,value");
    while (std::getline(in, line)) {
        std::stringstream row(line);
        std::string w, s, site, layer, v;
        std::getline(row, w, ','), std::getline(row, s, ','), std::getline(row, site, ',');
        std::getline(row, layer, ','), std::getline(row, v, ',');
        if (std::stoi(s) == step && layer == "-1") out[site][std::stoi(w)] = std::stod(v);
    }
    return out;
}

double spread(const std::map<int, double>& by_width) {
    double lo = 1e300, hi = 0;
    for (const auto& [w, v] : by_width) lo = std::min(lo, v), hi = std::max(hi, v);
    return hi / lo;
}

TEST(CoordCheck, MupIsWidthStableAndStandardIsNot) {
    const std::string dir = test::temp_dir("coord");
    auto mup =
        test::run_command(test::meshlm_binary() + " coord-check --out " + dir + "/mup" + kShape +
                          " --config.model.mup.enabled=true --config.optim.mup_rule=mup"
                          " --config.model.mup.d_base=64");
    ASSERT_EQ(mup.exit_code, 0) << mup.output;
    auto sp =
        test::run_command(test::meshlm_binary() + " coord-check --out " + dir + "/sp" + kShape);
    ASSERT_EQ(sp.exit_code, 0) << sp.output;
    for (const char* f : {"coord.csv", "updates.csv", "coord.svg", "coord.png"}) {
        EXPECT_GT(fs::file_size(dir + "/mup/" + f), 100u) << f;
        EXPECT_GT(fs::file_size(dir + "/sp/" + f), 100u) << f;
    }
    EXPECT_EQ(test::read_file(dir + "/mup/coord.png").substr(1, 3), "PNG");
    EXPECT_NE(test::read_file(dir + "/mup/coord.svg").find("<svg"), std::string::npos);

    const auto m = read_csv(dir + "/mup/coord.csv", 5), s = read_csv(dir + "/sp/coord.csv", 5);
    ASSERT_EQ(m.size(), 15u);  // 14 sites + logits
    for (const auto& [site, by_width] : m) {
        ASSERT_EQ(by_width.size(), 4u) << site;
        EXPECT_LE(spread(by_width), 2.0) << "muP site " << site;
    }
    // Standard parameterization: the logits and the residual branches grow with the width.
    const auto& logits = s.at("logits");
    EXPECT_GT(logits.at(512), 2.0 * logits.at(64));
    for (const char* site : {"ar", "fr"}) EXPECT_GT(spread(s.at(site)), 4.0) << site;
    EXPECT_NE(mup.output.find("spread"), std::string::npos) << mup.output;
}

TEST(CoordCheck, BadWidthsAreRefused) {
    const std::string dir = test::temp_dir("coord_bad");
    for (const auto& [widths, message] : std::vector<std::pair<std::string, std::string>>{
             {"64", "at least two widths"},
             {"128,64", "increasing order"},
             {"64,x", "'x' is not a positive width"},
             {"64,100", "100 is not a multiple of the head width 32"}}) {
        auto r = test::run_command(test::meshlm_binary() + " coord-check --out " + dir +
                                   "/o --widths " + widths);
        EXPECT_EQ(r.exit_code, 2) << widths << "\n" << r.output;
        EXPECT_NE(r.output.find(message), std::string::npos) << widths << "\n" << r.output;
    }
}

}  // namespace
}  // namespace meshlm
