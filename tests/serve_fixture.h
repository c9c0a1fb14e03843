// Shared by the `meshlm serve` end-to-end tests: a server process on a free port, and a tiny
// run trained on numbered documents with two task files made from them.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <thread>

#include "test_util.h"

namespace meshlm {
using json = nlohmann::json;
using namespace std::chrono_literals;

// A `meshlm serve` process on a free port.
class ServeProcess {
  public:
    ServeProcess(const std::string& run, const std::string& flags, const std::string& log)
        : log_(log) {
        const std::string cmd = "exec " + test::meshlm_binary() + " serve --checkpoint " + run +
                                " --port 0 --threads 2 " + flags + " > " + log + " 2>&1";
        pid_ = fork();
        if (pid_ == 0) {
            execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
            _exit(127);
        }
        const auto deadline = std::chrono::steady_clock::now() + 60s;
        const std::regex listening("listening on http://127\\.0\\.0\\.1:([0-9]+)");
        while (std::chrono::steady_clock::now() < deadline) {
            std::smatch m;
            const std::string out = test::read_file(log);
            if (std::regex_search(out, m, listening)) {
                port_ = std::stoi(m[1]);
                return;
            }
            if (exited()) break;
            std::this_thread::sleep_for(50ms);
        }
        ADD_FAILURE() << "the server did not start:\n" << test::read_file(log);
    }
    ~ServeProcess() {
        if (!exited()) {
            kill(pid_, SIGKILL);
            waitpid(pid_, nullptr, 0);
        }
    }
    int port() const { return port_; }
    pid_t pid() const { return pid_; }
    std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
    std::string log() const { return test::read_file(log_); }
    bool exited() {
        if (status_ >= 0) return true;
        int st;
        if (waitpid(pid_, &st, WNOHANG) == pid_) status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
        return status_ >= 0;
    }
    // Exit status within `timeout`, or -1.
    int wait(std::chrono::seconds timeout) {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        while (!exited() && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(20ms);
        return status_;
    }

  private:
    std::string log_;
    pid_t pid_ = -1;
    int port_ = 0, status_ = -1;
};

// A run trained on ChatML conversations with a context that holds one (the suite's run has 64
// positions, fewer than a system and a user turn take in bytes).
inline std::string train_chat_run(const std::string& dir) {
    std::ofstream out(dir + "/chat_corpus.txt");
    for (int i = 0; i < 300; ++i)
        out << "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nDoc " << i
            << "?<|im_end|>\n<|im_start|>assistant\nDocument " << i << ": a fox jumps " << i % 5
            << "<|im_end|>\n\n%\n";
    out.close();
    auto r = test::run_command(
        test::meshlm_binary() + " train --config " + test::source_dir() +
        "/configs/tiny-gpt2.yaml"  // a GPT-2: `meshlm serve` has no Transformer-VQ yet
        " --config.model.n_layer=2 --config.model.d_model=32 --config.model.n_head=2"
        " --config.model.max_seq_len=192 --config.train.seq_len=128 --config.train.batch_size=8"
        " --config.train.steps=100 --config.train.threads=2 --config.train.peak_gflops=100"
        " --config.log.interval=50 --config.log.eval_interval=100 --config.log.sample_tokens=0"
        " --config.data.path=" +
        dir + "/chat_corpus.txt --config.log.dir=" + dir + "/chat_run" +
        " --config.data.cache_dir=" + dir + "/chat_cache");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return dir + "/chat_run";
}

class ServeCli : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        dir_ = new std::string(test::temp_dir("serve_cli"));
        std::ofstream out(*dir_ + "/corpus.txt");
        for (int i = 0; i < 300; ++i)
            out << "Document " << i << ": a fox jumps " << i % 5 << "\n%\n";
        out.close();
        auto r = test::run_command(
            test::meshlm_binary() + " train --config " + test::source_dir() +
            "/configs/tiny-gpt2.yaml"  // a GPT-2: `meshlm serve` has no Transformer-VQ (the
                                       // default run's recipe) yet
            " --config.model.n_layer=2 --config.model.d_model=32 --config.model.n_head=2"
            " --config.model.max_seq_len=64 --config.train.seq_len=32 --config.train.batch_size=8"
            " --config.train.steps=300 --config.train.threads=2 --config.train.peak_gflops=100"
            " --config.log.interval=20 --config.log.eval_interval=300 --config.log.sample_tokens=0"
            " --config.data.path=" +
            *dir_ + "/corpus.txt --config.log.dir=" + *dir_ + "/run" +
            " --config.data.cache_dir=" + *dir_ + "/cache");
        ASSERT_EQ(r.exit_code, 0) << r.output;
        std::ofstream lw(*dir_ + "/last_word.jsonl"), mc(*dir_ + "/choice.jsonl");
        for (int i = 0; i < 24; ++i) {
            lw << json{{"text", "Document " + std::to_string(i * 7) + ": a fox jumps " +
                                    std::to_string(i * 7 % 5)}}
                      .dump()
               << "\n";
            mc << json{{"context", "Document " + std::to_string(i * 3) + ": a fox"},
                       {"choices",
                        {"jumps " + std::to_string((i * 3 + 1) % 5), "sleeps",
                         "jumps " + std::to_string(i * 3 % 5), "runs far away"}},
                       {"gold", 2}}
                      .dump()
               << "\n";
        }
    }
    static void TearDownTestSuite() { delete dir_; }
    static std::string run() { return *dir_ + "/run"; }
    static inline std::string* dir_ = nullptr;
};

}  // namespace meshlm
