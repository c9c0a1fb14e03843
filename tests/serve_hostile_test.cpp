// `meshlm serve` against hostile and unlucky clients, end to end on the real binary: the threads
// an idle server holds, a thousand idle connections beside a real request, slow headers and slow
// bodies cut at --read-timeout, bodies too large or too deep refused before they are parsed,
// invalid UTF-8, and a soak of mixed good and bad clients after which the memory is back near
// its baseline and every good answer is the one the server gives when alone.
#include <arpa/inet.h>
#include <dirent.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <future>

#include "serve_fixture.h"

namespace meshlm {
namespace {
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Threads of a process: the entries of /proc/PID/task.
int thread_count(pid_t pid) {
    DIR* d = opendir(("/proc/" + std::to_string(pid) + "/task").c_str());
    if (!d) return -1;
    int n = 0;
    while (const dirent* e = readdir(d)) n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

// Resident memory of a process in MiB (VmRSS of /proc/PID/status).
double rss_mib(pid_t pid) {
    const std::string s = test::read_file("/proc/" + std::to_string(pid) + "/status");
    const std::size_t at = s.find("VmRSS:");
    return at == std::string::npos ? -1 : std::stod(s.substr(at + 6)) / 1024;
}

int connect_to(int port) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

// Whether the server has closed `fd` (what it sent before is read and dropped).
bool closed_by_server(int fd, int wait_ms) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, wait_ms) <= 0) return false;
    char buf[4096];
    const ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN);
}

// Sends `head` then `trickle` one byte every `gap`; the seconds until the server hangs up
// (or -1 after `give_up` seconds).
double trickle_until_cut(int port, const std::string& head, const std::string& trickle,
                         std::chrono::milliseconds gap, double give_up) {
    const int fd = connect_to(port);
    if (fd < 0) return -2;
    const auto t0 = Clock::now();
    send(fd, head.data(), head.size(), MSG_NOSIGNAL);
    double cut = -1;
    for (std::size_t i = 0; seconds_since(t0) < give_up; ++i) {
        if (closed_by_server(fd, static_cast<int>(gap.count())) ||
            send(fd, &trickle[i % trickle.size()], 1, MSG_NOSIGNAL) < 0) {
            cut = seconds_since(t0);
            break;
        }
    }
    close(fd);
    return cut;
}

// Whether `out` holds a whole answer: its head and a body of its Content-Length.
bool whole_answer(const std::string& out) {
    const std::size_t end = out.find("\r\n\r\n");
    const std::size_t cl = out.find("Content-Length: ");
    if (end == std::string::npos || cl == std::string::npos || cl > end) return false;
    return out.size() >= end + 4 + std::stoul(out.substr(cl + 16));
}

// One raw request; the answer (until it is whole, the server closes, or `wait_s` passes).
std::string raw_request(int port, const std::string& request, double wait_s = 10) {
    const int fd = connect_to(port);
    if (fd < 0) return "";
    send(fd, request.data(), request.size(), MSG_NOSIGNAL);
    std::string out;
    const auto t0 = Clock::now();
    char buf[4096];
    while (!whole_answer(out) && seconds_since(t0) < wait_s) {
        pollfd p{fd, POLLIN, 0};
        if (poll(&p, 1, 100) <= 0) continue;
        const ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n <= 0) break;
        out.append(buf, static_cast<std::size_t>(n));
    }
    close(fd);
    return out;
}

// The body of a raw answer.
std::string body_of(const std::string& answer) {
    const std::size_t end = answer.find("\r\n\r\n");
    return end == std::string::npos ? "" : answer.substr(end + 4);
}

// The open-file limit up to its hard limit: the tests hold a thousand sockets.
void raise_open_files() {
    rlimit r{};
    getrlimit(RLIMIT_NOFILE, &r);
    r.rlim_cur = r.rlim_max;
    setrlimit(RLIMIT_NOFILE, &r);
}

std::string post_head(std::size_t length, const std::string& path = "/v1/completions") {
    return "POST " + path +
           " HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: "
           "application/json\r\nContent-Length: " +
           std::to_string(length) + "\r\n\r\n";
}

// A tiny run (its text does not matter: good answers are checked against the server's own
// answers to the same requests one at a time), trained once for the suite.
class ServeHostile : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        raise_open_files();
        dir_ = new std::string(test::temp_dir("serve_hostile"));
        std::ofstream out(*dir_ + "/corpus.txt");
        for (int i = 0; i < 100; ++i)
            out << "Document " << i << ": a fox jumps " << i % 5 << "\n%\n";
        out.close();
        auto r = test::run_command(
            test::meshlm_binary() + " train --config " + test::source_dir() +
            "/configs/tiny-gpt2.yaml"  // a GPT-2: `meshlm serve` has no Transformer-VQ yet
            " --config.model.n_layer=2 --config.model.d_model=32 --config.model.n_head=2"
            " --config.model.max_seq_len=64 --config.train.seq_len=32 --config.train.batch_size=4"
            " --config.train.steps=10 --config.train.threads=2 --config.train.peak_gflops=100"
            " --config.log.eval_interval=0 --config.log.sample_tokens=0 --config.data.path=" +
            *dir_ + "/corpus.txt --config.log.dir=" + *dir_ + "/run" +
            " --config.data.cache_dir=" + *dir_ + "/cache");
        ASSERT_EQ(r.exit_code, 0) << r.output;
    }
    static void TearDownTestSuite() { delete dir_; }
    static std::string run() { return *dir_ + "/run"; }
    static std::string log(const std::string& name) { return *dir_ + "/" + name + ".log"; }

    // A greedy completion: the status and the text (or the error body).
    static std::pair<int, std::string> complete(int port, const std::string& prompt) {
        httplib::Client c("127.0.0.1", port);
        c.set_read_timeout(30, 0);
        auto res = c.Post("/v1/completions",
                          json{{"prompt", prompt}, {"max_tokens", 8}, {"temperature", 0}}.dump(),
                          "application/json");
        if (!res) return {-1, httplib::to_string(res.error())};
        if (res->status != 200) return {res->status, res->body};
        return {200, json::parse(res->body)["choices"][0]["text"].get<std::string>()};
    }
    // A gauge of /metrics, or -1.
    static double gauge(int port, const std::string& name) {
        httplib::Client c("127.0.0.1", port);
        auto res = c.Get("/metrics");
        if (!res) return -1;
        const std::size_t at = res->body.find("\n" + name + " ");
        return at == std::string::npos ? -1 : std::stod(res->body.substr(at + name.size() + 2));
    }
    static inline std::string* dir_ = nullptr;
};

// 309 threads before: a pool of --max-running + --max-waiting + 16 connection threads, all
// started at once. Now the idle server holds its own few (main, signals, drain watcher, engine,
// compute, the connection parker) and workers start with requests; and idle connections hold no
// thread at all, so a thousand of them neither add threads nor delay a real request.
TEST_F(ServeHostile, IdleServerHoldsFewThreadsAndAThousandIdleConnectionsDoNotDelayARequest) {
    ServeProcess srv(run(), "--idle-timeout 4", log("idle"));
    ASSERT_GT(srv.port(), 0);
    std::this_thread::sleep_for(300ms);
    const int idle_threads = thread_count(srv.pid());
    std::printf("threads of an idle server: %d\n", idle_threads);
    EXPECT_GT(idle_threads, 0);
    EXPECT_LE(idle_threads, 12);

    std::vector<int> idle;
    for (int i = 0; i < 1000; ++i) {
        const int fd = connect_to(srv.port());
        ASSERT_GE(fd, 0) << "connection " << i << ": " << std::strerror(errno);
        idle.push_back(fd);
    }
    const auto t_parked = Clock::now();
    while (gauge(srv.port(), "meshlm_http_idle_connections") < 1000 && seconds_since(t_parked) < 5)
        std::this_thread::sleep_for(20ms);
    EXPECT_GE(gauge(srv.port(), "meshlm_http_idle_connections"), 1000);

    const auto t0 = Clock::now();
    const auto [status, text] = complete(srv.port(), "Document 3");
    const double latency = seconds_since(t0);
    std::printf("a completion beside 1000 idle connections: %.3f s\n", latency);
    EXPECT_EQ(status, 200) << text;
    EXPECT_LT(latency, 2.0);
    const int busy_threads = thread_count(srv.pid());
    std::printf("threads with 1000 idle connections open: %d\n", busy_threads);
    EXPECT_LE(busy_threads, idle_threads + 4);

    // Silent past --idle-timeout: every one is closed by the server.
    std::this_thread::sleep_for(4s - (Clock::now() - t_parked));
    int closed = 0;
    for (int fd : idle) {
        closed += closed_by_server(fd, 3000);
        close(fd);
    }
    EXPECT_EQ(closed, 1000);
    EXPECT_EQ(complete(srv.port(), "Document 3").second, text);
}

// Past --max-connections, new connections are closed as they arrive; the ones open keep
// working, and once they go the server takes new ones again.
TEST_F(ServeHostile, ConnectionsPastTheLimitAreClosedAsTheyArrive) {
    ServeProcess srv(run(), "--max-connections 20", log("limit"));
    ASSERT_GT(srv.port(), 0);
    std::vector<int> fds;
    for (int i = 0; i < 30; ++i) fds.push_back(connect_to(srv.port()));
    int refused = 0;
    for (int i = 0; i < 30; ++i) refused += closed_by_server(fds[i], i < 20 ? 200 : 2000);
    EXPECT_EQ(refused, 10);
    const std::string health = "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    send(fds[0], health.data(), health.size(), MSG_NOSIGNAL);
    char buf[256] = {};
    pollfd p{fds[0], POLLIN, 0};
    ASSERT_GT(poll(&p, 1, 5000), 0);
    EXPECT_GT(recv(fds[0], buf, sizeof buf - 1, 0), 0);
    EXPECT_EQ(std::string(buf).rfind("HTTP/1.1 200", 0), 0u) << buf;
    for (int fd : fds) close(fd);
    std::this_thread::sleep_for(300ms);
    EXPECT_EQ(complete(srv.port(), "Document 2").first, 200);
}

// Slowloris: headers, or a body, a byte every 200 ms are cut at --read-timeout from their first
// byte, while a real request beside them is answered at once.
TEST_F(ServeHostile, SlowHeadersAndSlowBodiesAreCutAtTheReadTimeoutWithoutBlockingOthers) {
    ServeProcess srv(run(), "--read-timeout 2", log("slow"));
    ASSERT_GT(srv.port(), 0);
    std::vector<std::future<double>> slow;
    for (int i = 0; i < 8; ++i)
        slow.push_back(std::async(std::launch::async, [&, i] {
            if (i % 2 == 0)  // headers that never end
                return trickle_until_cut(srv.port(), "POST /v1/completions HTTP/1.1\r\n",
                                         "X-Slow: aaaaaaaa\r\n", 200ms, 15);
            return trickle_until_cut(srv.port(), post_head(1000), "{\"prompt\": \"aaaa", 200ms, 15);
        }));
    std::this_thread::sleep_for(500ms);
    const auto t0 = Clock::now();
    const auto [status, text] = complete(srv.port(), "Document 1");
    const double latency = seconds_since(t0);
    EXPECT_EQ(status, 200) << text;
    EXPECT_LT(latency, 1.0) << "a request beside 8 slow clients";
    for (int i = 0; i < 8; ++i) {
        const double cut = slow[i].get();
        std::printf("slow %s cut after %.2f s\n", i % 2 ? "body" : "headers", cut);
        EXPECT_GE(cut, 1.8) << i;
        EXPECT_LE(cut, 3.5) << i;
    }
    EXPECT_FALSE(srv.exited()) << srv.log();
}

// A Content-Length over --max-body gets 413 before a byte of the body is read; a body that
// nests deeper than 64 levels gets 400 at that level, not after a tree of it is built.
TEST_F(ServeHostile, HugeOrDeeplyNestedBodiesAreRefusedBeforeTheyCostMemory) {
    ServeProcess srv(run(), "", log("huge"));
    ASSERT_GT(srv.port(), 0);
    EXPECT_EQ(complete(srv.port(), "a").first, 200);
    const double rss0 = rss_mib(srv.pid());
    // Declared 2 GB, none sent: the answer comes at once, the connection is not kept.
    const auto t0 = Clock::now();
    const std::string a = raw_request(srv.port(), post_head(2000000000), 5);
    EXPECT_LT(seconds_since(t0), 2.0);
    EXPECT_EQ(a.rfind("HTTP/1.1 413", 0), 0u) << a;
    EXPECT_NE(body_of(a).find("larger than 1048576 bytes"), std::string::npos) << a;
    // Nesting: 400000 brackets (0.8 MB, under the limit).
    const std::string deep =
        "{\"prompt\": " + std::string(400000, '[') + std::string(400000, ']') + "}";
    for (const char* path : {"/v1/completions", "/v1/chat/completions", "/tokenize"}) {
        const std::string d = raw_request(srv.port(), post_head(deep.size(), path) + deep);
        EXPECT_EQ(d.rfind("HTTP/1.1 400", 0), 0u) << path << ": " << d.substr(0, 300);
        EXPECT_NE(body_of(d).find("deeper than 64 levels"), std::string::npos) << d;
    }
    const double rss1 = rss_mib(srv.pid());
    std::printf("RSS %.1f MiB before, %.1f MiB after the deep bodies\n", rss0, rss1);
    if (!test::sanitizer_build())
        EXPECT_LT(rss1 - rss0, 8.0);  // ASan's quarantine holds freed memory
    // Nesting within the limit is parsed as usual (here: a prompt of token-id lists).
    json nested = {{"prompt", json::array({json::array({65, 66})})}, {"max_tokens", 1}};
    const std::string n = nested.dump();
    EXPECT_EQ(raw_request(srv.port(), post_head(n.size()) + n).rfind("HTTP/1.1 200", 0), 0u);
}

// JSON text is UTF-8: a prompt with bytes that are not is refused with a 400 that says so (the
// tokenizer never sees it); token ids whose bytes are not UTF-8 (a byte-level tokenizer takes
// them as they are) come back as valid JSON, the bad bytes replaced.
TEST_F(ServeHostile, InvalidUtf8IsA400NamingItAndByteTokensComeBackAsValidJson) {
    ServeProcess srv(run(), "", log("utf8"));
    ASSERT_GT(srv.port(), 0);
    const std::string bad = "{\"prompt\": \"ab\xff\xfe\xc3(\", \"max_tokens\": 2}";
    for (const char* path : {"/v1/completions", "/tokenize"}) {
        const std::string a = raw_request(srv.port(), post_head(bad.size(), path) + bad);
        EXPECT_EQ(a.rfind("HTTP/1.1 400", 0), 0u) << a;
        EXPECT_NE(body_of(a).find("UTF-8"), std::string::npos) << a;
    }
    const std::string lone = R"({"prompt": "a\udc80b"})";
    EXPECT_EQ(raw_request(srv.port(), post_head(lone.size()) + lone).rfind("HTTP/1.1 400", 0), 0u);
    httplib::Client c("127.0.0.1", srv.port());
    c.set_keep_alive(true);
    auto info = c.Get("/tokenizer_info");
    ASSERT_TRUE(info);
    const int V = json::parse(info->body)["vocab_size"];
    // Every byte token at once, then some alone (each request costs a delayed ACK here).
    json all = json::array();
    for (int id = 0; id < std::min(V, 300); ++id) all.push_back(id);
    std::vector<json> lists = {all};
    for (int id = 128; id < std::min(V, 300); id += 13) lists.push_back({id, id});
    for (const json& ids : lists) {
        auto res = c.Post("/detokenize", json{{"tokens", ids}}.dump(), "application/json");
        ASSERT_TRUE(res) << ids;
        ASSERT_EQ(res->status, 200) << ids << ": " << res->body;
        EXPECT_NO_THROW(json::parse(res->body)) << ids;  // (nlohmann checks UTF-8)
    }
    auto echo = c.Post("/v1/completions",
                       json{{"prompt", {255, 254, 200}}, {"max_tokens", 2}, {"echo", true}}.dump(),
                       "application/json");
    ASSERT_TRUE(echo);
    EXPECT_EQ(echo->status, 200) << echo->body;
    EXPECT_NO_THROW(json::parse(echo->body));
}

// One bad client of the soak, of kind `kind`: returns when the server has dealt with it.
void bad_client(int port, int kind) {
    const std::string deep = "[" + std::string(5000, '[') + std::string(5001, ']');
    const std::string utf8 = "{\"prompt\": \"\xff\xfe\"}";
    const std::string stream = json{{"prompt", "Doc"}, {"max_tokens", 40}, {"stream", true}}.dump();
    switch (kind % 8) {
        case 0:  // truncated JSON
            raw_request(port, post_head(20) + "{\"prompt\": \"Docum");
            break;
        case 1:
            raw_request(port, post_head(deep.size()) + deep);
            break;
        case 2:  // a huge body announced, a little sent
            raw_request(port, post_head(900000000) + std::string(4000, 'x'));
            break;
        case 3:
            raw_request(port, post_head(utf8.size()) + utf8);
            break;
        case 4:  // slow headers, cut at --read-timeout
            trickle_until_cut(port, "GET /health HTTP/1.1\r\n", "X: y\r\n", 100ms, 5);
            break;
        case 5: {  // connections that never send a byte
            std::vector<int> fds;
            for (int i = 0; i < 20; ++i) fds.push_back(connect_to(port));
            std::this_thread::sleep_for(200ms);
            for (int fd : fds) close(fd);
            break;
        }
        case 6: {  // a stream dropped after its first bytes
            const int fd = connect_to(port);
            const std::string r = post_head(stream.size()) + stream;
            send(fd, r.data(), r.size(), MSG_NOSIGNAL);
            char buf[64];
            pollfd p{fd, POLLIN, 0};
            if (poll(&p, 1, 5000) > 0) recv(fd, buf, sizeof buf, 0);
            close(fd);
            break;
        }
        default:  // not HTTP at all
            raw_request(port, std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11) +
                                  std::string(300, '\0') + "\r\n\r\n");
    }
}

// A few minutes' worth of mixed traffic, shortened for the unit suite: 3 good clients (greedy
// requests whose answers must equal the ones given alone) beside 3 bad ones cycling through
// every kind above, for a warm-up and then 20 s. The memory ends near where it was after the
// warm-up, and the workers started for the load exit again.
TEST_F(ServeHostile, SoakOfMixedGoodAndBadClientsEndsAtTheBaselineWithEveryGoodAnswerRight) {
    ServeProcess srv(run(), "--read-timeout 1 --idle-timeout 2", log("soak"));
    ASSERT_GT(srv.port(), 0);
    const double rss_start = rss_mib(srv.pid());
    const int threads_start = thread_count(srv.pid());
    std::vector<std::string> prompts, want;
    for (int i = 0; i < 12; ++i) {
        prompts.push_back("Document " + std::to_string(i * 7) + ": a");
        const auto [status, text] = complete(srv.port(), prompts.back());
        ASSERT_EQ(status, 200) << text;
        want.push_back(text);
    }
    std::atomic<int> good{0}, wrong{0}, bad_done{0};
    auto load = [&](double secs) {
        std::vector<std::thread> clients;
        const auto end = Clock::now() + std::chrono::duration<double>(secs);
        for (int t = 0; t < 3; ++t) {
            clients.emplace_back([&, t] {
                for (int i = t; Clock::now() < end; i += 3) {
                    const auto [status, text] = complete(srv.port(), prompts[i % prompts.size()]);
                    if (status == 200 && text == want[i % prompts.size()])
                        ++good;
                    else if (wrong++ < 3)
                        std::printf("good request %d: %d %s\n", i, status, text.c_str());
                }
            });
            clients.emplace_back([&, t] {
                for (int k = t; Clock::now() < end; k += 3, ++bad_done) bad_client(srv.port(), k);
            });
        }
        for (auto& c : clients) c.join();
    };
    load(4);
    std::this_thread::sleep_for(500ms);
    const double rss_warm = rss_mib(srv.pid());
    load(20);
    std::this_thread::sleep_for(1s);
    const double rss_end = rss_mib(srv.pid());
    std::printf(
        "soak: %d good answers, %d wrong, %d bad clients; RSS %.1f MiB at start, %.1f "
        "after warm-up, %.1f at the end\n",
        good.load(), wrong.load(), bad_done.load(), rss_start, rss_warm, rss_end);
    EXPECT_EQ(wrong, 0);
    EXPECT_GT(good, 100);
    EXPECT_GT(bad_done, 50);
    if (!test::sanitizer_build()) EXPECT_LT(rss_end, rss_warm + 8.0);  // as above
    // Workers idle for 5 s exit: the thread count goes back to where it started (plus the two
    // workers kept).
    const auto t0 = Clock::now();
    while (thread_count(srv.pid()) > threads_start + 3 && seconds_since(t0) < 10)
        std::this_thread::sleep_for(100ms);
    std::printf("soak: threads %d at start, %d after\n", threads_start, thread_count(srv.pid()));
    EXPECT_LE(thread_count(srv.pid()), threads_start + 3);
    EXPECT_EQ(complete(srv.port(), prompts[0]).second, want[0]);
    EXPECT_FALSE(srv.exited()) << srv.log();
}

}  // namespace
}  // namespace meshlm
