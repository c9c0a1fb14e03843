// `meshlm serve` and `meshlm eval --tasks` end to end on a tiny trained run: the `openai` Python
// client against the binary, SIGTERM draining in-flight requests, a second server refused on a
// busy port, the task evaluation's table and JSON and its agreement with the server's echo
// logprobs. (serve_cli_slow_test.cpp: the peers that take longer, lm-evaluation-harness and the
// playground in headless Chromium.)
#include <gtest/gtest.h>
#include <httplib.h>

#include <fstream>
#include <future>

#include "serve_fixture.h"

namespace meshlm {
namespace {

TEST_F(ServeCli, OpenAIPythonClientCompletesStreamsAndReadsLogprobs) {
    const std::string py = test::venv_python();
    ASSERT_FALSE(py.empty()) << "no .venv with the openai package: run scripts/test.sh";
    ServeProcess srv(run(), "--api-key sekret", *dir_ + "/openai.log");
    auto r = test::run_command("timeout 120 " + py + " " + test::source_dir() +
                               "/tests/serve/openai_client_check.py " + srv.url() + "/v1 sekret");
    EXPECT_EQ(r.exit_code, 0) << r.output << "\n" << srv.log();
    EXPECT_NE(r.output.find("passed, 0 failed"), std::string::npos) << r.output;
}

TEST_F(ServeCli, OpenAIPythonClientChatsThroughTheDefaultTemplate) {
    const std::string py = test::venv_python();
    ASSERT_FALSE(py.empty()) << "no .venv with the openai package: run scripts/test.sh";
    const std::string chat_run = train_chat_run(*dir_);
    ServeProcess srv(chat_run, "--api-key sekret", *dir_ + "/openai_chat.log");
    auto r = test::run_command("timeout 120 " + py + " " + test::source_dir() +
                               "/tests/serve/openai_chat_check.py " + srv.url() + "/v1 sekret");
    EXPECT_EQ(r.exit_code, 0) << r.output << "\n" << srv.log();
    EXPECT_NE(r.output.find("passed, 0 failed"), std::string::npos) << r.output;
}

TEST_F(ServeCli, SigtermFinishesInFlightRequestsAndExitsZero) {
    // The suite's tiny model writes 60 tokens between two polls of /metrics, so this test serves
    // a wider, untrained one whose requests stay in flight for about a second (~7 ms a token on
    // 2 threads here) and asks for 150 tokens each.
    const std::string slow = *dir_ + "/slow_run";
    auto tr = test::run_command(
        test::meshlm_binary() + " train --config " + test::source_dir() +
        "/configs/tiny-gpt2.yaml --config.model.n_layer=8 --config.model.d_model=512"
        " --config.model.n_head=8"
        " --config.model.max_seq_len=256 --config.train.seq_len=16 --config.train.batch_size=1"
        " --config.train.steps=1 --config.train.threads=2 --config.train.peak_gflops=100"
        " --config.log.eval_interval=0 --config.log.sample_tokens=0 --config.data.path=" +
        *dir_ + "/corpus.txt --config.log.dir=" + slow + " --config.data.cache_dir=" + *dir_ +
        "/cache");
    ASSERT_EQ(tr.exit_code, 0) << tr.output;
    constexpr int kTokens = 150;
    ServeProcess srv(slow, "--max-running 2", *dir_ + "/sigterm.log");
    ASSERT_GT(srv.port(), 0);
    httplib::Client cli("127.0.0.1", srv.port());
    cli.set_read_timeout(60, 0);
    // Two long requests in flight (one streamed), then SIGTERM once both have started.
    auto streamed = std::async(std::launch::async, [&] {
        httplib::Client c("127.0.0.1", srv.port());
        c.set_read_timeout(60, 0);
        auto res = c.Post(
            "/v1/completions",
            json{{"prompt", "Doc"}, {"max_tokens", kTokens}, {"stream", true}, {"ignore_eos", true}}
                .dump(),
            "application/json");
        return res ? res->body : std::string("no response");
    });
    auto plain = std::async(std::launch::async, [&] {
        httplib::Client c("127.0.0.1", srv.port());
        c.set_read_timeout(60, 0);
        auto res =
            c.Post("/v1/completions",
                   json{{"prompt", "Doc"}, {"max_tokens", kTokens}, {"ignore_eos", true}}.dump(),
                   "application/json");
        return res ? res->status * 1000 +
                         static_cast<int>(json::parse(res->body)["usage"]["completion_tokens"])
                   : -1;
    });
    // Wait until the engine holds both sequences.
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    for (;;) {
        auto m = cli.Get("/metrics");
        if (m && m->body.find("meshlm_running_sequences 2") != std::string::npos) break;
        ASSERT_LT(std::chrono::steady_clock::now(), deadline) << srv.log();
        std::this_thread::sleep_for(5ms);
    }
    ASSERT_EQ(kill(srv.pid(), SIGTERM), 0);
    EXPECT_EQ(plain.get(), 200 * 1000 + kTokens);
    const std::string events = streamed.get();
    EXPECT_NE(events.find("\"finish_reason\":\"length\""), std::string::npos) << events;
    EXPECT_NE(events.find("data: [DONE]"), std::string::npos);
    EXPECT_EQ(srv.wait(30s), 0) << srv.log();
    EXPECT_NE(srv.log().find("meshlm serve: stopped"), std::string::npos) << srv.log();
    httplib::Client after("127.0.0.1", srv.port());
    after.set_connection_timeout(2, 0);
    EXPECT_FALSE(after.Get("/health"));  // nobody listens any more
}

// httplib's default socket options set SO_REUSEPORT, which let a second serve bind a busy port
// and the kernel split connections between two models: the second must exit, naming the port.
TEST_F(ServeCli, ASecondServeOnABusyPortExitsNamingThePort) {
    ServeProcess first(run(), "", *dir_ + "/first.log");
    ASSERT_GT(first.port(), 0);
    const std::string port = std::to_string(first.port());
    // `timeout`: a second server that did bind would serve until killed.
    auto r = test::run_command("timeout 30 " + test::meshlm_binary() + " serve --checkpoint " +
                               run() + " --threads 2 --port " + port);
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_NE(r.exit_code, 124) << "the second server bound the busy port:\n" << r.output;
    EXPECT_NE(r.output.find("127.0.0.1:" + port), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("in use"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("listening on"), std::string::npos) << r.output;
    // The first server still answers, alone.
    httplib::Client cli("127.0.0.1", first.port());
    for (int i = 0; i < 4; ++i) {
        auto h = cli.Get("/health");
        ASSERT_TRUE(h) << first.log();
        EXPECT_EQ(h->status, 200);
    }
    EXPECT_FALSE(first.exited()) << first.log();
}

TEST_F(ServeCli, EvalTasksPrintsATableWritesJsonAndAgreesWithTheServer) {
    const std::string out = *dir_ + "/results.json";
    auto r = test::run_command(test::meshlm_binary() + " eval --checkpoint " + run() +
                               " --threads 2 --tasks " + *dir_ + "/last_word.jsonl " + *dir_ +
                               "/choice.jsonl --output " + out);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    for (const char* s : {"| last_word", "| choice", "acc_norm", "perplexity", "24/24"})
        EXPECT_NE(r.output.find(s), std::string::npos) << s << "\n" << r.output;
    json res = json::parse(test::read_file(out));
    EXPECT_EQ(res["max_length"], 63);
    const json& lw = res["results"]["last_word"];
    const json& mc = res["results"]["choice"];
    EXPECT_EQ(lw["n"], 24);
    EXPECT_EQ(mc["kind"], "multiple_choice");
    EXPECT_GE(mc["acc"].get<double>(), 0.0);
    EXPECT_GT(lw["perplexity"].get<double>(), 1.0);
    // The trained model knows its documents: better than chance on both.
    EXPECT_GT(mc["acc"].get<double>(), 0.25) << r.output;
    EXPECT_GT(lw["acc"].get<double>(), 0.2) << r.output;

    // Each choice's log-likelihood is the sum of the server's echo logprobs over it (what
    // lm-eval computes), bit for bit.
    ServeProcess srv(run(), "", *dir_ + "/eval.log");
    httplib::Client cli("127.0.0.1", srv.port());
    cli.set_read_timeout(60, 0);
    for (int i : {0, 5, 11}) {
        const std::string ctx = "Document " + std::to_string(i * 3) + ": a fox";
        const std::vector<std::string> choices = {"jumps " + std::to_string((i * 3 + 1) % 5),
                                                  "sleeps", "jumps " + std::to_string(i * 3 % 5),
                                                  "runs far away"};
        for (int c = 0; c < 4; ++c) {
            const std::string& choice = choices[c];
            auto tk = cli.Post("/tokenize", json{{"prompt", ctx}}.dump(), "application/json");
            ASSERT_TRUE(tk);
            const int ctxlen = static_cast<int>(json::parse(tk->body)["tokens"].size());
            auto e = cli.Post("/v1/completions",
                              json{{"prompt", ctx + " " + choice},
                                   {"max_tokens", 1},
                                   {"temperature", 0},
                                   {"logprobs", 1},
                                   {"echo", true}}
                                  .dump(),
                              "application/json");
            ASSERT_TRUE(e);
            ASSERT_EQ(e->status, 200) << e->body;
            const json lps = json::parse(e->body)["choices"][0]["logprobs"]["token_logprobs"];
            double sum = 0;
            for (std::size_t p = ctxlen; p + 1 < lps.size(); ++p) sum += lps[p].get<double>();
            EXPECT_EQ(sum, res["samples"]["choice"][i]["loglikelihoods"][c].get<double>())
                << i << " " << c;
        }
    }
}

TEST_F(ServeCli, EvalTasksRejectsABadFileNamingTheLine) {
    test::write_file(*dir_ + "/bad.jsonl",
                     "{\"context\": \"a\", \"choices\": [\"b\", \"c\"], "
                     "\"gold\": 0}\n{\"context\": \"a\", \"choices\": "
                     "[\"b\"], \"gold\": 0}\n");
    auto r = test::run_command(test::meshlm_binary() + " eval --checkpoint " + run() + " --tasks " +
                               *dir_ + "/bad.jsonl");
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.output.find("bad.jsonl:2"), std::string::npos) << r.output;
    r = test::run_command(test::meshlm_binary() + " eval --checkpoint " + run() + " --tasks " +
                          *dir_ + "/bad.jsonl --split val");
    EXPECT_NE(r.exit_code, 0);
}

}  // namespace
}  // namespace meshlm
