// meshlm plot: exit codes and the errors for a missing run, an unknown metric (naming the
// run's metrics) and a bad --out; the SVG has one stroked path per (run, metric) in one colour
// per run; the PNG has PNG's signature and the size asked for.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <regex>
#include <string>

#include "test_util.h"

namespace fs = std::filesystem;

namespace meshlm {
namespace {

class Plot : public ::testing::Test {
  protected:
    void SetUp() override {
        dir_ = test::temp_dir("plot");
        // Two runs written by hand: a and b have loss at every step, val_loss at some.
        for (const auto& [run, scale] : {std::pair{"a", 1.0}, {"b", 0.8}}) {
            fs::create_directories(dir_ + "/" + run);
            std::string lines;
            for (int s = 1; s <= 6; ++s)
                lines += "{\"step\": " + std::to_string(s) +
                         ", \"loss\": " + std::to_string(scale * (6.0 - 0.5 * s)) +
                         ", \"lr\": 0.001" +
                         (s % 3 == 0 ? ", \"val_loss\": " + std::to_string(scale * (6.2 - 0.5 * s))
                                     : std::string()) +
                         ", \"vq\": {\"commit\": 0.5}, \"tokens\": " + std::to_string(s * 64) +
                         ", \"time\": \"2025-01-01T00:00:0" + std::to_string(s) + ".000Z\"}\n";
            test::write_file(dir_ + "/" + run + "/metrics.jsonl", lines);
        }
    }
    test::CommandResult plot(const std::string& args) {
        return test::run_command(test::meshlm_binary() + " plot " + args);
    }
    std::string dir_;
};

TEST_F(Plot, SvgHasOnePathPerRunAndMetric) {
    const std::string out = dir_ + "/runs.svg";
    const auto r = plot(dir_ + "/a " + dir_ + "/b --metric loss,val_loss,vq/commit --out " + out);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const std::string svg = test::read_file(out);
    // Stroked paths by colour: black (frames, ticks) aside, each run's colour strokes one path
    // per metric. (Cairo writes the colour as stroke="rgb(...)" or in style="stroke:rgb(...)".)
    std::map<std::string, int> strokes;
    const std::regex path_re("<path[^>]*stroke[:=]\"?(rgb\\([^)]*\\))");
    for (auto it = std::sregex_iterator(svg.begin(), svg.end(), path_re);
         it != std::sregex_iterator(); ++it) {
        std::string colour = (*it)[1];
        colour.erase(std::remove(colour.begin(), colour.end(), ' '), colour.end());
        if (colour != "rgb(0%,0%,0%)") ++strokes[colour];
    }
    ASSERT_EQ(strokes.size(), 2u) << svg.substr(0, 2000);
    for (const auto& [colour, n] : strokes) EXPECT_EQ(n, 3) << colour;
    EXPECT_FALSE(fs::exists(out + ".tmp"));
    EXPECT_NE(r.output.find("wrote " + out), std::string::npos) << r.output;
}

TEST_F(Plot, PngHasTheSignatureAndTheSize) {
    const std::string out = dir_ + "/runs.png";
    const auto r = plot(dir_ + "/a " + dir_ +
                        "/b --metric loss --log-y --log-x --size 640x360 "
                        "--out " +
                        out);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const std::string png = test::read_file(out);
    ASSERT_GT(png.size(), 24u);
    EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
    // IHDR: big-endian width and height at bytes 16 and 20.
    auto be32 = [&](std::size_t at) {
        return (unsigned char)png[at] << 24 | (unsigned char)png[at + 1] << 16 |
               (unsigned char)png[at + 2] << 8 | (unsigned char)png[at + 3];
    };
    EXPECT_EQ(png.substr(12, 4), "IHDR");
    EXPECT_EQ(be32(16), 640);
    EXPECT_EQ(be32(20), 360);
}

TEST_F(Plot, BadInputIsNamed) {
    struct Case {
        std::string args, message;
    };
    for (const Case& c : std::vector<Case>{
             {dir_ + "/missing --out " + dir_ + "/x.svg", "no run directory " + dir_ + "/missing"},
             {dir_ + " --out " + dir_ + "/x.svg", dir_ + " has no metrics.jsonl"},
             {dir_ + "/a --metric loss,vall_loss --out " + dir_ + "/x.svg",
              "has no metric 'vall_loss'; its metrics: loss, lr, val_loss, vq/commit"},
             {dir_ + "/a --out " + dir_ + "/x.pdf", "must end in .svg or .png"},
             {dir_ + "/a --size 12 --out " + dir_ + "/x.png", "--size 12 is not WIDTHxHEIGHT"},
             {"--out " + dir_ + "/x.svg", "runs is required"}}) {
        const auto r = plot(c.args);
        EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.output;
        EXPECT_NE(r.output.find(c.message), std::string::npos) << c.args << "\n" << r.output;
    }
    EXPECT_FALSE(fs::exists(dir_ + "/x.svg"));
    EXPECT_FALSE(fs::exists(dir_ + "/x.png"));
}

}  // namespace
}  // namespace meshlm
