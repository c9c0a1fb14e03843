// The OpenAI-compatible server in process (a random small model, the byte tokenizer), driven
// over loopback by cpp-httplib clients: completions in every prompt form, streaming, logprobs
// and echo, errors, the side endpoints, the bounded queue (503), cancelled clients freeing
// their sequences, and continuous batching never changing a greedy or seeded result (the load
// test: 32 clients x 20 requests against one-at-a-time answers).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <future>
#include <nlohmann/json.hpp>
#include <thread>

#include "meshlm/core/threads.h"
#include "meshlm/infer/server.h"
#include "meshlm/kernels/kernels.h"
#include "meshlm/model/transformer_layout.h"

namespace meshlm {
namespace {
using json = nlohmann::json;
using namespace std::chrono_literals;

ModelConfig small_model() {
    ModelConfig c;
    c.n_layer = 2;
    c.d_model = 64;
    c.n_head = 4;
    c.vocab_size = 257;
    c.max_seq_len = 96;
    c.position = "rope";
    c.init_std = 0.3f;  // peaked distributions: greedy text that is not all one byte
    return c;
}

// A server on a free loopback port, run on its own thread.
struct TestServer {
    ModelConfig cfg;
    std::vector<float> params;
    ByteTokenizer tok;
    Metrics metrics;
    std::unique_ptr<Engine> engine;
    std::unique_ptr<Server> server;
    std::thread thread;
    int port = 0;

    explicit TestServer(EngineOptions eo = {}, ServerOptions so = {},
                        ModelConfig model = small_model())
        : cfg(model) {
        ParamLayout layout = transformer_layout(cfg);
        params.resize(layout.total());
        init_params(cfg, layout, params.data(), 11);
        engine = std::make_unique<Engine>(cfg, params.data(), tok, eo, &metrics);
        so.port = 0;
        so.model_name = "tiny";
        server = std::make_unique<Server>(*engine, tok, so, metrics);
        port = server->bind();
        thread = std::thread([this] { server->run(); });
    }
    ~TestServer() {
        server->stop();
        thread.join();
    }
    httplib::Client client(const std::string& key = "") const {
        httplib::Client c("127.0.0.1", port);
        c.set_read_timeout(60, 0);
        c.set_connection_timeout(5, 0);
        c.set_keep_alive(true);  // (its Connection: close requests sometimes lost a response
                                 // that waited over a second; curl and Python clients did not)
        if (!key.empty()) c.set_bearer_token_auth(key.c_str());
        return c;
    }
};

class Serve : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        set_thread_count(2);
        srv_ = new TestServer();
    }
    static void TearDownTestSuite() { delete srv_; }

    static json post(const std::string& path, const json& body, int want = 200) {
        auto cli = srv_->client();
        auto res = cli.Post(path.c_str(), body.dump(), "application/json");
        EXPECT_TRUE(res) << path;
        if (!res) return {};
        EXPECT_EQ(res->status, want) << res->body;
        return json::parse(res->body);
    }
    static json complete(json body) {
        if (!body.contains("model")) body["model"] = "tiny";
        return post("/v1/completions", body);
    }
    // An error's body: status, and the field it names.
    static void expect_error(const json& body, int status, const std::string& param) {
        auto cli = srv_->client();
        auto res = cli.Post("/v1/completions", body.dump(), "application/json");
        ASSERT_TRUE(res);
        EXPECT_EQ(res->status, status) << body.dump() << " -> " << res->body;
        json j = json::parse(res->body);
        ASSERT_TRUE(j.contains("error")) << res->body;
        EXPECT_TRUE(j["error"]["message"].is_string());
        EXPECT_EQ(j["error"]["param"], param.empty() ? json(nullptr) : json(param))
            << body.dump() << " -> " << res->body;
    }
    static TestServer* srv_;
};
TestServer* Serve::srv_ = nullptr;

TEST_F(Serve, CompletionHasTheOpenAIShape) {
    json r = complete({{"prompt", "Hello"}, {"max_tokens", 12}, {"temperature", 0}});
    EXPECT_EQ(r["object"], "text_completion");
    EXPECT_EQ(r["model"], "tiny");
    EXPECT_EQ(r["id"].get<std::string>().rfind("cmpl-", 0), 0u);
    ASSERT_EQ(r["choices"].size(), 1u);
    const json& c = r["choices"][0];
    EXPECT_EQ(c["index"], 0);
    EXPECT_TRUE(c["text"].is_string());
    EXPECT_TRUE(c["logprobs"].is_null());
    EXPECT_TRUE(c["finish_reason"] == "length" || c["finish_reason"] == "stop");
    EXPECT_EQ(r["usage"]["prompt_tokens"], 5);
    EXPECT_LE(r["usage"]["completion_tokens"].get<int>(), 12);
    EXPECT_EQ(r["usage"]["total_tokens"].get<int>(),
              5 + r["usage"]["completion_tokens"].get<int>());
}

TEST_F(Serve, EveryPromptFormGivesTheSameGreedyText) {
    const json base = {{"max_tokens", 10}, {"temperature", 0}, {"ignore_eos", true}};
    auto with = [&](json prompt) {
        json b = base;
        b["prompt"] = prompt;
        return complete(b);
    };
    json one = with("abc");
    const std::string text = one["choices"][0]["text"];
    EXPECT_EQ(one["choices"][0]["finish_reason"], "length");
    EXPECT_EQ(with(json::array({97, 98, 99}))["choices"][0]["text"], text);
    json many = with(json::array({"abc", "xyz", "abc"}));
    ASSERT_EQ(many["choices"].size(), 3u);
    EXPECT_EQ(many["choices"][0]["text"], text);
    EXPECT_EQ(many["choices"][2]["text"], text);
    EXPECT_EQ(many["choices"][1]["index"], 1);
    json ids = with(json::array({json::array({97, 98, 99}), json::array({120, 121, 122})}));
    EXPECT_EQ(ids["choices"][0]["text"], text);
    EXPECT_EQ(ids["choices"][1]["text"], many["choices"][1]["text"]);
    EXPECT_EQ(ids["usage"]["prompt_tokens"], 6);
    EXPECT_EQ(ids["usage"]["completion_tokens"], 20);
}

TEST_F(Serve, SeededSamplingRepeatsAndChoicesDiffer) {
    json b = {{"prompt", "Once"}, {"max_tokens", 24}, {"temperature", 1.5},
              {"seed", 42},       {"n", 3},           {"ignore_eos", true},
              {"top_k", 50},      {"top_p", 0.95},    {"repetition_penalty", 1.2}};
    json a = complete(b), again = complete(b);
    ASSERT_EQ(a["choices"].size(), 3u);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(a["choices"][i]["text"], again["choices"][i]["text"]);
    EXPECT_NE(a["choices"][0]["text"], a["choices"][1]["text"]);
    b["seed"] = 43;
    EXPECT_NE(complete(b)["choices"][0]["text"], a["choices"][0]["text"]);
    // typical_p and eta_cutoff reach the sampler: a tiny typical mass keeps one token per step
    // (the one nearest the entropy), so every choice is the same whatever its stream; eta alone
    // still samples.
    b["typical_p"] = 1e-6;
    json one = complete(b);
    EXPECT_EQ(one["choices"][0]["text"], one["choices"][1]["text"]);
    EXPECT_EQ(one["choices"][0]["text"], one["choices"][2]["text"]);
    b.erase("typical_p");
    b["eta_cutoff"] = 0.001;
    json eta = complete(b);
    EXPECT_NE(eta["choices"][0]["text"], eta["choices"][1]["text"]);
}

TEST_F(Serve, StopStringsCutTheText) {
    json full =
        complete({{"prompt", "The"}, {"max_tokens", 40}, {"temperature", 0}, {"ignore_eos", true}});
    const std::string text = full["choices"][0]["text"];
    // A one-byte stop string from the text (ASCII: the random model also makes partial UTF-8).
    std::size_t at = 2;
    while (at < text.size() && static_cast<unsigned char>(text[at]) >= 0x80) ++at;
    ASSERT_LT(at, text.size()) << text;
    const std::string stop = text.substr(at, 1);
    json cut = complete({{"prompt", "The"},
                         {"max_tokens", 40},
                         {"temperature", 0},
                         {"ignore_eos", true},
                         {"stop", json::array({stop, "\x01\x02"})}});
    EXPECT_EQ(cut["choices"][0]["text"], text.substr(0, text.find(stop)));
    EXPECT_EQ(cut["choices"][0]["finish_reason"], "stop");
}

TEST_F(Serve, LogprobsAndEchoGiveWhatLmEvalReads) {
    json r = complete({{"prompt", json::array({72, 101, 108, 108, 111})},
                       {"max_tokens", 3},
                       {"temperature", 0},
                       {"logprobs", 2},
                       {"echo", true},
                       {"ignore_eos", true}});
    const json& c = r["choices"][0];
    const json& lp = c["logprobs"];
    ASSERT_EQ(lp["tokens"].size(), 8u);
    ASSERT_EQ(lp["token_logprobs"].size(), 8u);
    ASSERT_EQ(lp["top_logprobs"].size(), 8u);
    ASSERT_EQ(lp["text_offset"].size(), 8u);
    EXPECT_TRUE(lp["token_logprobs"][0].is_null());
    EXPECT_TRUE(lp["top_logprobs"][0].is_null());
    EXPECT_EQ(c["text"].get<std::string>().rfind("Hello", 0), 0u);
    for (int i = 0; i < 8; ++i) EXPECT_EQ(lp["text_offset"][i], i);  // one byte per token
    for (int i = 1; i < 8; ++i) {
        const float t = lp["token_logprobs"][i].get<float>();
        EXPECT_LE(t, 0.f);
        ASSERT_EQ(lp["top_logprobs"][i].size(), 2u) << lp["top_logprobs"][i];  // distinct names
        float mx = -INFINITY;
        for (auto& [k, v] : lp["top_logprobs"][i].items()) mx = std::max(mx, v.get<float>());
        if (i >= 5)
            EXPECT_EQ(t, mx) << i;  // greedy tokens: exactly the top logprob
        else
            EXPECT_LE(t, mx);
    }
    // Echo with max_tokens 0 only scores the prompt: the same prompt logprobs.
    json s = complete({{"prompt", json::array({72, 101, 108, 108, 111})},
                       {"max_tokens", 0},
                       {"logprobs", 1},
                       {"echo", true}});
    ASSERT_EQ(s["choices"][0]["logprobs"]["token_logprobs"].size(), 5u);
    for (int i = 1; i < 5; ++i)
        EXPECT_EQ(s["choices"][0]["logprobs"]["token_logprobs"][i], lp["token_logprobs"][i]);
    EXPECT_EQ(s["choices"][0]["text"], "Hello");
    EXPECT_EQ(s["usage"]["completion_tokens"], 0);
    // Without echo, logprobs cover the generated tokens only.
    json g = complete({{"prompt", "Hello"},
                       {"max_tokens", 3},
                       {"temperature", 0},
                       {"logprobs", 0},
                       {"ignore_eos", true}});
    ASSERT_EQ(g["choices"][0]["logprobs"]["tokens"].size(), 3u);
    EXPECT_EQ(g["choices"][0]["logprobs"]["token_logprobs"][0], lp["token_logprobs"][5]);
    EXPECT_EQ(g["choices"][0]["logprobs"]["top_logprobs"][0].size(), 0u);
}

// The events of a streamed completion, and whether it ended with [DONE].
std::vector<json> stream(TestServer& srv, json body, bool* done,
                         const std::string& path = "/v1/completions") {
    body["stream"] = true;
    auto cli = srv.client();
    std::string buf;
    auto res = cli.Post(path, httplib::Headers{}, body.dump(), "application/json");
    EXPECT_TRUE(res);
    EXPECT_EQ(res->status, 200);
    EXPECT_EQ(res->get_header_value("Content-Type"), "text/event-stream");
    std::vector<json> events;
    *done = false;
    std::string b = res->body;
    std::size_t at;
    while ((at = b.find("\n\n")) != std::string::npos) {
        std::string ev = b.substr(0, at);
        b.erase(0, at + 2);
        EXPECT_EQ(ev.rfind("data: ", 0), 0u) << ev;
        ev = ev.substr(6);
        if (ev == "[DONE]") {
            *done = true;
            continue;
        }
        EXPECT_FALSE(*done) << "an event after [DONE]";
        events.push_back(json::parse(ev));
    }
    EXPECT_TRUE(b.empty());
    return events;
}

TEST_F(Serve, StreamingSendsTheSameTextInPieces) {
    json body = {{"prompt", json::array({"Hi", "Yo"})},
                 {"max_tokens", 16},
                 {"temperature", 0},
                 {"logprobs", 1},
                 {"ignore_eos", true},
                 {"stream_options", {{"include_usage", true}}}};
    json whole = complete(body);
    bool done = false;
    auto events = stream(*srv_, body, &done);
    EXPECT_TRUE(done);
    ASSERT_GE(events.size(), 3u);  // a choice's tokens may come in one event: the model is fast
    std::string text[2];
    int tokens[2] = {0, 0};
    std::string finish[2];
    for (std::size_t i = 0; i + 1 < events.size(); ++i) {
        const json& e = events[i];
        EXPECT_EQ(e["object"], "text_completion");
        ASSERT_EQ(e["choices"].size(), 1u);
        const json& c = e["choices"][0];
        const int k = c["index"];
        text[k] += c["text"].get<std::string>();
        tokens[k] += static_cast<int>(c["logprobs"]["tokens"].size());
        if (!c["finish_reason"].is_null()) finish[k] = c["finish_reason"];
    }
    for (int k = 0; k < 2; ++k) {
        EXPECT_EQ(text[k], whole["choices"][k]["text"]);
        EXPECT_EQ(tokens[k], 16);
        EXPECT_EQ(finish[k], "length");
    }
    const json& last = events.back();
    EXPECT_EQ(last["choices"].size(), 0u);
    EXPECT_EQ(last["usage"]["completion_tokens"], 32);
}

// The chat endpoint over the default (ChatML) template: the prompt is the rendered conversation,
// and the answer is what /v1/completions gives for it with the template's end of turn as a stop.
// (The model's context is 96 tokens: one user turn, in content parts.)
const char* kChatPrompt = "<|im_start|>user\nHi?<|im_end|>\n<|im_start|>assistant\n";
json chat_messages() {
    return json::array({{{"role", "user"},
                         {"content", json::array({{{"type", "text"}, {"text", "H"}},
                                                  {{"type", "text"}, {"text", "i?"}}})}}});
}

TEST_F(Serve, ChatCompletionIsTheTemplatedPromptsCompletion) {
    json r = post("/v1/chat/completions",
                  {{"messages", chat_messages()}, {"max_tokens", 20}, {"temperature", 0}});
    EXPECT_EQ(r["object"], "chat.completion");
    EXPECT_EQ(r["id"].get<std::string>().rfind("chatcmpl-", 0), 0u) << r;
    ASSERT_EQ(r["choices"].size(), 1u);
    const json& c = r["choices"][0];
    EXPECT_EQ(c["index"], 0);
    EXPECT_EQ(c["message"]["role"], "assistant");
    EXPECT_TRUE(c["logprobs"].is_null());
    EXPECT_EQ(r["usage"]["prompt_tokens"], std::string(kChatPrompt).size());
    json plain = complete(
        {{"prompt", kChatPrompt}, {"max_tokens", 20}, {"temperature", 0}, {"stop", "<|im_end|>"}});
    EXPECT_EQ(c["message"]["content"], plain["choices"][0]["text"]);
    EXPECT_EQ(c["finish_reason"], plain["choices"][0]["finish_reason"]);
    EXPECT_EQ(r["usage"]["completion_tokens"], plain["usage"]["completion_tokens"]);
    // Without max_tokens the answer may fill the context (OpenAI's chat default).
    json open = post("/v1/chat/completions",
                     {{"messages", chat_messages()}, {"temperature", 0}, {"ignore_eos", true}});
    const int room = srv_->cfg.max_seq_len - static_cast<int>(std::string(kChatPrompt).size());
    EXPECT_LE(open["usage"]["completion_tokens"].get<int>(), room);
    if (open["choices"][0]["finish_reason"] == "length") {
        EXPECT_EQ(open["usage"]["completion_tokens"], room);
    }
}

TEST_F(Serve, ChatStreamsDeltasAndLogprobsWithByteValues) {
    json body = {
        {"messages", chat_messages()}, {"max_tokens", 16},  {"temperature", 0}, {"logprobs", true},
        {"top_logprobs", 20},          {"ignore_eos", true}};
    json whole = post("/v1/chat/completions", body);
    const json& lp = whole["choices"][0]["logprobs"]["content"];
    ASSERT_EQ(lp.size(), 16u) << whole;
    int high = 0;  // bytes above 127: the model is random, so some top token is one
    for (const json& t : lp) {
        EXPECT_LE(t["logprob"].get<double>(), 0.0);
        ASSERT_EQ(t["top_logprobs"].size(), 20u);
        EXPECT_EQ(t["top_logprobs"][0]["logprob"], t["logprob"]);  // greedy: the top token
        for (const json& e : t["top_logprobs"]) {
            ASSERT_EQ(e["bytes"].size(), 1u) << e;  // one byte a token
            const int b = e["bytes"][0];
            EXPECT_TRUE(b >= 0 && b <= 255) << e;
            high += b > 127;
            EXPECT_EQ(e["token"].get<std::string>().rfind("bytes:", 0) == 0, b > 127) << e;
        }
    }
    EXPECT_GT(high, 0);

    bool done = false;
    auto events = stream(*srv_, body, &done, "/v1/chat/completions");
    EXPECT_TRUE(done);
    ASSERT_FALSE(events.empty());
    std::string text, finish;
    std::size_t tokens = 0;
    for (std::size_t i = 0; i < events.size(); ++i) {
        const json& e = events[i];
        EXPECT_EQ(e["object"], "chat.completion.chunk");
        EXPECT_EQ(e["id"], events[0]["id"]);
        ASSERT_EQ(e["choices"].size(), 1u);
        const json& c = e["choices"][0];
        EXPECT_EQ(c["delta"].contains("role"), i == 0) << e;
        text += c["delta"]["content"].get<std::string>();
        tokens += c["logprobs"]["content"].size();
        if (!c["finish_reason"].is_null()) finish = c["finish_reason"];
    }
    EXPECT_EQ(text, whole["choices"][0]["message"]["content"]);
    EXPECT_EQ(tokens, 16u);
    EXPECT_EQ(finish, "length");
}

TEST_F(Serve, ChatBadRequestsNameTheirField) {
    auto expect_chat_error = [](const json& body, const std::string& param) {
        auto cli = srv_->client();
        auto res = cli.Post("/v1/chat/completions", body.dump(), "application/json");
        ASSERT_TRUE(res);
        EXPECT_EQ(res->status, 400) << body.dump() << " -> " << res->body;
        json j = json::parse(res->body);
        ASSERT_TRUE(j.contains("error")) << res->body;
        EXPECT_EQ(j["error"]["type"], "invalid_request_error");
        EXPECT_EQ(j["error"]["param"], param) << body.dump() << " -> " << res->body;
    };
    const json user = json::array({{{"role", "user"}, {"content", "x"}}});
    expect_chat_error({{"max_tokens", 2}}, "messages");
    expect_chat_error({{"messages", "hi"}}, "messages");
    expect_chat_error({{"messages", json::array()}}, "messages");
    expect_chat_error({{"messages", json::array({"hi"})}}, "messages");
    expect_chat_error({{"messages", json::array({{{"content", "x"}}})}}, "messages");
    expect_chat_error({{"messages", json::array({{{"role", "wizard"}, {"content", "x"}}})}},
                      "messages");
    expect_chat_error({{"messages", json::array({{{"role", "user"}, {"content", 3}}})}},
                      "messages");
    expect_chat_error({{"messages", json::array({{{"role", "user"}}})}}, "messages");
    expect_chat_error(
        {{"messages",
          json::array({{{"role", "user"}, {"content", json::array({{{"type", "image_url"}}})}}})}},
        "messages");
    expect_chat_error({{"messages", user}, {"prompt", "x"}}, "prompt");
    expect_chat_error({{"messages", user}, {"echo", true}}, "echo");
    expect_chat_error({{"messages", user}, {"top_logprobs", 2}}, "top_logprobs");
    expect_chat_error({{"messages", user}, {"logprobs", 2}}, "logprobs");
    expect_chat_error({{"messages", user}, {"max_tokens", 0}}, "max_tokens");
    expect_chat_error({{"messages", user}, {"max_tokens", 96}}, "max_tokens");
    expect_chat_error({{"messages", user}, {"temperature", -1}}, "temperature");
    expect_chat_error({{"messages", user}, {"n", 0}}, "n");
}

// A chat stops at its setup's stop tokens (a template's end of turn, generation_config's
// eos_token_id): the token ends the text, which does not show it.
TEST(ServeChat, StopIdsEndTheAnswer) {
    set_thread_count(2);
    const json body = {
        {"messages", chat_messages()}, {"max_tokens", 24}, {"temperature", 0}, {"logprobs", true}};
    auto ask = [&](TestServer& srv) {
        auto res = srv.client().Post("/v1/chat/completions", body.dump(), "application/json");
        EXPECT_TRUE(res && res->status == 200) << (res ? res->body : "no response");
        return res ? json::parse(res->body) : json();
    };
    std::vector<std::int32_t> ids;  // the greedy answer's tokens (the byte tokenizer: one a byte)
    {
        TestServer srv;
        const json r = ask(srv);
        for (const json& t : r["choices"][0]["logprobs"]["content"])
            ids.push_back(t["bytes"][0].get<std::int32_t>());
    }
    ASSERT_GE(ids.size(), 6u) << "the random model's greedy answer ended early";
    // Stop at the first occurrence of the answer's fourth token.
    const std::int32_t stop = ids[3];
    const std::size_t k = std::find(ids.begin(), ids.end(), stop) - ids.begin();
    ServerOptions so;
    so.chat = load_chat_setup({}, ByteTokenizer());
    so.chat.stop_ids.push_back(stop);
    TestServer srv({}, so);
    const json r = ask(srv);
    const json& c = r["choices"][0];
    EXPECT_EQ(c["finish_reason"], "stop") << r;
    EXPECT_EQ(r["usage"]["completion_tokens"], k + 1) << r;  // the stop token is counted
    ASSERT_EQ(c["logprobs"]["content"].size(), k + 1) << r;
    EXPECT_EQ(c["logprobs"]["content"][k]["bytes"][0], stop);
    // The text is the tokens before it (through the same UTF-8 repair as the server's JSON).
    const std::string before = srv.tok.decode({ids.begin(), ids.begin() + k});
    EXPECT_EQ(c["message"]["content"],
              json::parse(json(before).dump(-1, ' ', false, json::error_handler_t::replace)));
}

TEST_F(Serve, BadRequestsNameTheirField) {
    auto cli = srv_->client();
    auto res = cli.Post("/v1/completions", "{not json", "application/json");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 400);
    EXPECT_NE(res->body.find("not valid JSON"), std::string::npos);
    expect_error({{"max_tokens", 5}}, 400, "prompt");
    expect_error({{"prompt", 5}}, 400, "prompt");
    expect_error({{"prompt", json::array()}}, 400, "prompt");
    expect_error({{"prompt", json::array({1, 300})}}, 400, "prompt");
    expect_error({{"prompt", json::array({"a", 1})}}, 400, "prompt");
    expect_error({{"prompt", "a"}, {"max_tokens", "ten"}}, 400, "max_tokens");
    expect_error({{"prompt", "a"}, {"max_tokens", 1000000}}, 400, "max_tokens");
    expect_error({{"prompt", "a"}, {"max_tokens", -1}}, 400, "max_tokens");
    expect_error({{"prompt", "a"}, {"max_tokens", 96}}, 400, "max_tokens");
    expect_error({{"prompt", std::string(200, 'a')}}, 400, "prompt");
    expect_error({{"prompt", "a"}, {"temperature", -1}}, 400, "temperature");
    expect_error({{"prompt", "a"}, {"top_p", 0}}, 400, "top_p");
    expect_error({{"prompt", "a"}, {"typical_p", 0}}, 400, "typical_p");
    expect_error({{"prompt", "a"}, {"eta_cutoff", 1}}, 400, "eta_cutoff");
    expect_error({{"prompt", "a"}, {"eta_cutoff", -0.5}}, 400, "eta_cutoff");
    expect_error({{"prompt", "a"}, {"n", 0}}, 400, "n");
    expect_error({{"prompt", "a"}, {"n", 1000}}, 400, "n");
    expect_error({{"prompt", json::array({"a", "b", "c", "d", "e"})}, {"n", 16}}, 400, "n");
    expect_error({{"prompt", "a"}, {"logprobs", 100}}, 400, "logprobs");
    expect_error({{"prompt", "a"}, {"stop", 3}}, 400, "stop");
    expect_error({{"prompt", "a"}, {"stream", "yes"}}, 400, "stream");
    expect_error({{"prompt", "a"}, {"echo", 1}}, 400, "echo");
    expect_error({{"prompt", "a"}, {"seed", 1.5}}, 400, "seed");
    expect_error({{"prompt", "a"}, {"model", 3}}, 400, "model");
    expect_error({{"prompt", "a"}, {"max_tokens", 0}}, 400, "max_tokens");
    expect_error({{"prompt", "a"}, {"repetition_penalty", 0}}, 400, "repetition_penalty");
    // Truncation on request: the prompt keeps its last tokens.
    json t = complete(
        {{"prompt", std::string(200, 'a')}, {"max_tokens", 4}, {"truncate_prompt_tokens", 50}});
    EXPECT_EQ(t["usage"]["prompt_tokens"], 50);
    // A body over the limit, an unknown path.
    res = cli.Post("/v1/completions", std::string(2 << 20, ' '), "application/json");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 413);
    EXPECT_TRUE(json::parse(res->body).contains("error"));
    res = cli.Get("/v1/nothing");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 404);
    EXPECT_TRUE(json::parse(res->body).contains("error"));
}

// An unknown field is a 400 naming it, as OpenAI answers (a typo is not answered with defaults).
TEST_F(Serve, UnknownFieldsAreRefusedByName) {
    auto cli = srv_->client();
    auto post = [&](const char* path, const json& body) {
        auto res = cli.Post(path, body.dump(), "application/json");
        EXPECT_TRUE(res);
        return res ? std::make_pair(res->status, json::parse(res->body))
                   : std::make_pair(0, json());
    };
    auto [st, j] = post("/v1/completions", {{"prompt", "a"}, {"max_tokenz", 3}});
    EXPECT_EQ(st, 400) << j;
    EXPECT_EQ(j["error"]["param"], "max_tokenz") << j;
    EXPECT_EQ(j["error"]["type"], "invalid_request_error") << j;
    EXPECT_EQ(j["error"]["message"],
              "Unrecognized request argument supplied: max_tokenz (did you mean 'max_tokens'?)");
    std::tie(st, j) = post("/v1/completions", {{"prompt", "a"}, {"frobnicate", true}});
    EXPECT_EQ(st, 400) << j;
    EXPECT_EQ(j["error"]["message"], "Unrecognized request argument supplied: frobnicate");
    // A chat-only field on completions, a completions-only one on chat.
    std::tie(st, j) = post("/v1/completions", {{"prompt", "a"}, {"messages", json::array()}});
    EXPECT_EQ(st, 400) << j;
    EXPECT_EQ(j["error"]["param"], "messages") << j;
    const json msgs = json::array({{{"role", "user"}, {"content", "hi"}}});
    std::tie(st, j) =
        post("/v1/chat/completions", {{"messages", msgs}, {"max_tokens", 2}, {"temprature", 0}});
    EXPECT_EQ(st, 400) << j;
    EXPECT_EQ(j["error"]["param"], "temprature") << j;
    EXPECT_NE(j["error"]["message"].get<std::string>().find("did you mean 'temperature'"),
              std::string::npos)
        << j;
    std::tie(st, j) = post("/v1/chat/completions", {{"messages", msgs}, {"echo", true}});
    EXPECT_EQ(st, 400) << j;
    EXPECT_EQ(j["error"]["message"], "'echo' is not a chat completion parameter") << j;
    // Every documented field together is accepted.
    std::tie(st, j) = post("/v1/completions", {{"prompt", "a"},
                                               {"model", "m"},
                                               {"max_tokens", 2},
                                               {"temperature", 0},
                                               {"top_p", 1},
                                               {"n", 1},
                                               {"stream", false},
                                               {"stop", "zz"},
                                               {"seed", 1},
                                               {"presence_penalty", 0},
                                               {"frequency_penalty", 0},
                                               {"user", "u"},
                                               {"logit_bias", json::object()},
                                               {"top_k", 0},
                                               {"typical_p", 1},
                                               {"eta_cutoff", 0},
                                               {"ignore_eos", true},
                                               {"repetition_penalty", 1},
                                               {"truncate_prompt_tokens", 8},
                                               {"echo", false},
                                               {"logprobs", 1},
                                               {"suffix", ""},
                                               {"best_of", 1},
                                               {"stream_options", nullptr}});
    EXPECT_EQ(st, 200) << j;
    std::tie(st, j) = post("/v1/chat/completions", {{"messages", msgs},
                                                    {"max_completion_tokens", 2},
                                                    {"logprobs", true},
                                                    {"top_logprobs", 2},
                                                    {"temperature", 0},
                                                    {"ignore_eos", true}});
    EXPECT_EQ(st, 200) << j;
}

TEST_F(Serve, SideEndpoints) {
    auto cli = srv_->client();
    auto res = cli.Get("/v1/models");
    ASSERT_TRUE(res);
    json m = json::parse(res->body);
    EXPECT_EQ(m["object"], "list");
    EXPECT_EQ(m["data"][0]["id"], "tiny");
    EXPECT_EQ(m["data"][0]["max_model_len"], 96);
    res = cli.Get("/health");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 200);
    json tk = post("/tokenize", {{"prompt", "héllo"}, {"add_special_tokens", false}});
    EXPECT_EQ(tk["tokens"], json::array({104, 195, 169, 108, 108, 111}));
    EXPECT_EQ(post("/detokenize", {{"tokens", tk["tokens"]}})["prompt"], "héllo");
    post("/detokenize", {{"tokens", json::array({999})}}, 400);
    res = cli.Get("/tokenizer_info");
    ASSERT_TRUE(res);
    EXPECT_EQ(json::parse(res->body)["eos_token_id"], 256);
    res = cli.Get("/");
    ASSERT_TRUE(res);
    EXPECT_NE(res->body.find("meshlm playground"), std::string::npos);
    EXPECT_EQ(res->get_header_value("Content-Type"), "text/html; charset=utf-8");
    complete({{"prompt", "metrics"}, {"max_tokens", 3}});
    res = cli.Get("/metrics");
    ASSERT_TRUE(res);
    for (const char* s :
         {"meshlm_requests_total{path=\"/v1/completions\",status=\"200\"}",
          "meshlm_generation_tokens_total", "meshlm_prompt_tokens_total", "meshlm_queue_depth",
          "meshlm_running_sequences", "meshlm_kv_blocks_total",
          "meshlm_batch_rows_bucket{le=\"+Inf\"}", "meshlm_request_latency_seconds_count",
          "meshlm_time_to_first_token_seconds_bucket", "# TYPE meshlm_step_seconds histogram"})
        EXPECT_NE(res->body.find(s), std::string::npos) << s << "\n" << res->body;
}

// A scan of made-up paths -- answered 404 by routing, or 413 before routing from an oversized
// Content-Length -- adds no series to /metrics: every such request counts as "unmatched".
TEST_F(Serve, AScanOfPathsAddsNoMetricSeries) {
    auto series = [] {
        const std::string text = srv_->metrics.render();
        int n = 0;
        for (std::size_t at = 0;
             (at = text.find("\nmeshlm_requests_total{", at)) != std::string::npos; ++at)
            ++n;
        return n;
    };
    const std::string too_big = "unmatched\",status=\"413\"",
                      missing = "unmatched\",status=\"404\"";
    auto counted = [](const std::string& labels) {
        return srv_->metrics.counter("meshlm_requests", "path=\"" + labels);
    };
    // Both kinds once, so the series the scan may add exist before it is counted.
    const auto ask = [](const std::string& req, const char* want) {
        const std::string res = srv_->server->answer(req);
        EXPECT_TRUE(res.starts_with(want)) << req << " -> " << res;
    };
    const std::string big = " HTTP/1.1\r\nHost: x\r\nContent-Length: 999999999\r\n\r\n";
    ask("POST /scan" + big, "HTTP/1.1 413");
    ask("GET /scan HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 404");
    const int before = series();
    const double big_before = counted(too_big), missing_before = counted(missing);
    for (int i = 0; i < 200; ++i) {
        ask("POST /scan/" + std::to_string(i) + big, "HTTP/1.1 413");
        ask("GET /scan/" + std::to_string(i) + " HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 404");
    }
    EXPECT_EQ(series(), before);
    EXPECT_EQ(counted(too_big), big_before + 200);
    EXPECT_EQ(counted(missing), missing_before + 200);
}

TEST(ServeAuth, AWrongOrMissingKeyGets401) {
    set_thread_count(2);
    ServerOptions so;
    so.api_key = "sekret";
    TestServer srv({}, so);
    const std::string body = json{{"prompt", "a"}, {"max_tokens", 2}}.dump();
    for (const std::string key : {"", "wrong", "sekret"}) {
        auto cli = srv.client(key);
        auto res = cli.Post("/v1/completions", body, "application/json");
        ASSERT_TRUE(res);
        EXPECT_EQ(res->status, key == "sekret" ? 200 : 401) << key;
        if (key != "sekret") {
            EXPECT_EQ(json::parse(res->body)["error"]["code"], "invalid_api_key");
        }
        res = cli.Get("/v1/models");
        EXPECT_EQ(res->status, key == "sekret" ? 200 : 401);
        EXPECT_EQ(cli.Get("/health")->status, 200);  // open
    }
}

// Sends a streamed request on a raw socket and closes it after the first bytes arrive.
void start_and_hang_up(int port, const json& body) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    const std::string b = body.dump();
    const std::string req =
        "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
        "application/json\r\nContent-Length: " +
        std::to_string(b.size()) + "\r\n\r\n" + b;
    ASSERT_EQ(write(fd, req.data(), req.size()), static_cast<ssize_t>(req.size()));
    char buf[256];
    ASSERT_GT(read(fd, buf, sizeof buf), 0);
    close(fd);
}

// A server stopped before its accept loop has begun (a SIGTERM during start-up, a test that ends
// at once) still returns from run(): httplib's own stop() did nothing until the loop ran, which
// then waited for a connection forever.
TEST(ServeLimits, AStopBeforeRunStillEndsIt) {
    ModelConfig cfg = small_model();
    std::vector<float> params(transformer_layout(cfg).total());
    init_params(cfg, transformer_layout(cfg), params.data(), 11);
    ByteTokenizer tok;
    Metrics metrics;
    Engine engine(cfg, params.data(), tok, {}, &metrics);
    ServerOptions so;
    so.port = 0;
    Server server(engine, tok, so, metrics);
    server.bind();
    server.stop();
    auto ran = std::async(std::launch::async, [&] { server.run(); });
    const bool ended = ran.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
    EXPECT_TRUE(ended) << "run() still waits after stop()";
    if (!ended) server.stop();  // the loop runs now: this one ends it, so the test can finish
}

TEST(ServeLimits, AGoneClientFreesItsSequence) {
    set_thread_count(2);
    EngineOptions eo;
    eo.max_running = 2;
    // A model slow enough that 2000 tokens take many seconds even on a fast CPU (250 took under
    // the keep-alive's one second on a Zen 5, and the non-streamed one then finished).
    ModelConfig big = small_model();
    big.d_model = 512;
    big.n_head = 8;
    big.n_layer = 8;
    big.max_seq_len = 2048;
    TestServer srv(eo, {}, big);
    const int total = srv.engine->blocks_free();
    for (bool stream : {true, false}) {
        const double before = srv.metrics.counter("meshlm_generation_tokens");
        start_and_hang_up(
            srv.port,
            {{"prompt", "a"}, {"max_tokens", 2000}, {"stream", stream}, {"ignore_eos", true}});
        // Sequences end within a couple of seconds of the hang-up (non-streamed: at the next
        // one-second keep-alive byte), long before their 2000 tokens would.
        const auto deadline = std::chrono::steady_clock::now() + 20s;
        while (!srv.engine->idle() && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(20ms);
        EXPECT_TRUE(srv.engine->idle()) << "stream " << stream;
        EXPECT_EQ(srv.engine->blocks_free(), total);
        // What an operator sees: /metrics has the batch and the KV pages empty again.
        auto m = srv.client().Get("/metrics");
        ASSERT_TRUE(m);
        EXPECT_NE(m->body.find("\nmeshlm_running_sequences 0\n"), std::string::npos) << m->body;
        EXPECT_NE(m->body.find("\nmeshlm_kv_blocks_used 0\n"), std::string::npos) << m->body;
        EXPECT_LT(srv.metrics.counter("meshlm_generation_tokens") - before, 2000);
    }
    EXPECT_EQ(srv.metrics.counter("meshlm_sequences_finished", "reason=\"cancelled\""), 2);
}

TEST(ServeLimits, AFullQueueGets503WithRetryAfter) {
    set_thread_count(2);
    EngineOptions eo;
    eo.max_running = 1;
    eo.max_waiting = 1;
    eo.num_blocks = 8;  // 8 x 16 = 128 positions: one long request at a time
    TestServer srv(eo);
    const json body = {{"prompt", "a"}, {"max_tokens", 90}, {"ignore_eos", true}};
    std::vector<std::future<int>> got;
    std::vector<std::string> retry(6);
    for (int i = 0; i < 6; ++i)
        got.push_back(std::async(std::launch::async, [&, i] {
            auto cli = srv.client();
            auto res = cli.Post("/v1/completions", body.dump(), "application/json");
            if (!res) return -1;
            retry[i] = res->get_header_value("Retry-After");
            return res->status;
        }));
    int ok = 0, busy = 0;
    for (int i = 0; i < 6; ++i) {
        const int s = got[i].get();
        ok += s == 200;
        busy += s == 503;
        if (s == 503) {
            EXPECT_FALSE(retry[i].empty());
        }
    }
    EXPECT_GE(ok, 2);  // the running one and the queued one
    EXPECT_GE(busy, 1);
    EXPECT_EQ(ok + busy, 6);
    // More than the whole pool can ever hold: refused outright.
    auto cli = srv.client();
    auto res = cli.Post("/v1/completions",
                        json{{"prompt", std::string(50, 'a')}, {"max_tokens", 95}}.dump(),
                        "application/json");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 400);
}

TEST(ServeLoad, ConcurrentClientsGetTheOneAtATimeAnswers) {
    set_thread_count(2);
    EngineOptions eo;
    eo.max_running = 32;
    eo.max_rows = 64;  // long prompts are read in chunks between decode steps
    TestServer srv(eo);
    constexpr int kClients = 32, kRequests = 20;
    // Each request: its own prompt (some long), greedy or seeded sampling.
    auto body = [](int c, int r) {
        const int i = c * kRequests + r;
        std::string prompt = "Request " + std::to_string(i) + ": ";
        if (i % 7 == 0) prompt += std::string(60, static_cast<char>('a' + i % 26));
        json b = {{"prompt", prompt}, {"max_tokens", 4 + i % 13}, {"ignore_eos", true}};
        if (i % 3 == 0)
            b["temperature"] = 0;
        else
            b["temperature"] = 1.0, b["seed"] = i;
        if (i % 5 == 0) b["logprobs"] = 1;
        return b;
    };
    auto answer = [](const json& r) {
        json a = json::array();
        for (const json& c : r["choices"])
            a.push_back({c["text"], c["logprobs"], c["finish_reason"]});
        return a.dump();
    };
    // One at a time.
    std::vector<std::string> alone(kClients * kRequests);
    {
        auto cli = srv.client();
        for (int c = 0; c < kClients; ++c)
            for (int r = 0; r < kRequests; r += 4) {  // a sample of them, for time
                auto res = cli.Post("/v1/completions", body(c, r).dump(), "application/json");
                ASSERT_TRUE(res);
                ASSERT_EQ(res->status, 200);
                alone[c * kRequests + r] = answer(json::parse(res->body));
            }
    }
    std::atomic<int> errors{0}, mismatches{0}, done{0};
    std::vector<std::string> together(kClients * kRequests);
    std::vector<std::thread> clients;
    const auto t0 = std::chrono::steady_clock::now();
    for (int c = 0; c < kClients; ++c)
        clients.emplace_back([&, c] {
            auto cli = srv.client();
            for (int r = 0; r < kRequests; ++r) {
                const auto t1 = std::chrono::steady_clock::now();
                auto res = cli.Post("/v1/completions", body(c, r).dump(), "application/json");
                if (!res || res->status != 200) {
                    if (errors++ < 3)
                        std::printf(
                            "error after %.3f s: %s\n",
                            std::chrono::duration<double>(std::chrono::steady_clock::now() - t1)
                                .count(),
                            res ? (std::to_string(res->status) + " " + res->body).c_str()
                                : httplib::to_string(res.error()).c_str());
                    continue;
                }
                together[c * kRequests + r] = answer(json::parse(res->body));
                ++done;
            }
        });
    for (auto& t : clients) t.join();
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(errors, 0);
    EXPECT_EQ(done, kClients * kRequests);
    for (int i = 0; i < kClients * kRequests; ++i)
        if (!alone[i].empty() && alone[i] != together[i]) ++mismatches;
    EXPECT_EQ(mismatches, 0);
    // Batching happened: passes with many sequences.
    auto cli = srv.client();
    auto res = cli.Get("/metrics");
    ASSERT_TRUE(res);
    const std::string m = res->body;
    const std::size_t at = m.find("meshlm_batch_sequences_bucket{le=\"8\"}");
    ASSERT_NE(at, std::string::npos);
    const long le8 = std::stol(m.substr(m.find('}', at) + 2));
    const std::size_t at2 = m.find("meshlm_batch_sequences_count");
    const long all = std::stol(m.substr(at2 + std::string("meshlm_batch_sequences_count ").size()));
    EXPECT_LT(le8, all) << "no pass batched more than 8 sequences";
    std::printf("load test: %d requests in %.2f s\n", kClients * kRequests, secs);
}

}  // namespace
}  // namespace meshlm
