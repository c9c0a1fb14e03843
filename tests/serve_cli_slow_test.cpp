// The serving peers that take minutes: lm-evaluation-harness's `local-completions` model pointed
// at `meshlm serve` agreeing with `meshlm eval --tasks` example by example, and the playground
// page's completion and chat tabs driven in headless Chromium (screenshots are kept in
// build/test-artifacts/).
#include <gtest/gtest.h>

#include "serve_fixture.h"

namespace meshlm {
namespace {

class ServeCliSlow : public ServeCli {};

TEST_F(ServeCliSlow, LmEvalLocalCompletionsAgreesWithMeshlmEval) {
    const std::string py = test::venv_python();
    ASSERT_FALSE(py.empty()) << "no .venv: run scripts/test.sh";
    ASSERT_EQ(test::run_command(py + " -c 'import lm_eval'").exit_code, 0)
        << "lm-eval is not in .venv: run scripts/test.sh";
    const std::string out = *dir_ + "/results_lmeval.json";
    auto r = test::run_command(test::meshlm_binary() + " eval --checkpoint " + run() +
                               " --threads 2 --tasks " + *dir_ + "/last_word.jsonl " + *dir_ +
                               "/choice.jsonl --output " + out);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    ServeProcess srv(run(), "", *dir_ + "/lmeval.log");
    r = test::run_command("timeout 600 " + py + " " + test::source_dir() +
                          "/tests/serve/lm_eval_check.py " + srv.url() + "/v1/completions " + out +
                          " 63 " + *dir_ + "/last_word.jsonl " + *dir_ + "/choice.jsonl");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("2 passed, 0 failed"), std::string::npos) << r.output;
    std::printf("%s\n",
                r.output.substr(r.output.size() > 2000 ? r.output.size() - 2000 : 0).c_str());
}

TEST_F(ServeCliSlow, PlaygroundStreamsIntoThePageInHeadlessChromium) {
    ASSERT_EQ(test::run_command("command -v chromium").exit_code, 0)
        << "chromium is not installed: run scripts/test.sh";
    // The chat tab's conversation needs the chat run's context (192 positions).
    ServeProcess srv(train_chat_run(*dir_), "", *dir_ + "/playground.log");
    const std::string shot = test::meshlm_binary().substr(0, test::meshlm_binary().rfind('/')) +
                             "/test-artifacts/playground.png";
    auto r = test::run_command("timeout 180 python3 " + test::source_dir() +
                               "/tests/serve/playground_check.py " + srv.url() + " " + shot);
    EXPECT_EQ(r.exit_code, 0) << r.output << "\n" << srv.log();
    EXPECT_NE(r.output.find("2 passed, 0 failed"), std::string::npos) << r.output;
    EXPECT_FALSE(test::read_file(shot).empty()) << "no screenshot at " << shot;
    const std::string chat_shot = shot.substr(0, shot.size() - 4) + "_chat.png";
    EXPECT_FALSE(test::read_file(chat_shot).empty()) << "no screenshot at " << chat_shot;
    std::printf("%s\nscreenshot: %s\n", r.output.c_str(), shot.c_str());
}

}  // namespace
}  // namespace meshlm
