// `meshlm serve`: an OpenAI-compatible HTTP server over the Engine (cpp-httplib's parsing and
// routing over http_front.h's connection handling: idle connections hold no thread, a request
// must arrive within a deadline; the engine thread does the compute).
//
// Endpoints: POST /v1/completions and POST /v1/chat/completions (both streaming with server-sent
// events; chat prompts through the model's chat template, chat_request.h), GET /v1/models,
// GET /health, POST /tokenize, POST /detokenize, GET /tokenizer_info (lm-eval's remote
// tokenizer), GET /metrics (Prometheus text), GET / (the playground page).
// With an API key, /v1/*, /tokenize, /detokenize and /tokenizer_info need
// `Authorization: Bearer KEY`; /, /health and /metrics do not.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <string_view>

#include "meshlm/data/tokenizer.h"
#include "meshlm/infer/chat_request.h"
#include "meshlm/infer/engine.h"
#include "meshlm/infer/metrics.h"

namespace httplib {
class Server;
}

namespace meshlm {

struct ServerOptions {
    std::string host = "127.0.0.1";
    int port = 8080;                    // 0: any free port
    std::string api_key;                // empty: none needed
    std::string model_name = "meshlm";  // served model id
    std::size_t max_body_bytes = 1 << 20;
    int max_choices = 64;  // prompts x n per request
    int max_n = 16;
    int max_stop = 8;  // stop strings per request
    int max_logprobs = 20;
    int threads = 0;  // most requests read or answered at once (0: from the engine's limits)
    double request_timeout_s = 10;       // a request's head and body must arrive within it
    double idle_timeout_s = 5;           // a connection waits this long for its next request
    std::size_t max_connections = 4096;  // open connections; more are closed as they arrive
    int max_json_depth = 64;             // nesting of arrays and objects in a request body
    ChatSetup chat;  // /v1/chat/completions (no template: load_chat_setup's fallback)
};

// The 400-family error of a request: HTTP status, message, and the field it is about.
struct ApiError {
    ApiError(int status, std::string message, std::string param = "",
             std::string type = "invalid_request_error", std::string code = "")
        : status(status),
          message(std::move(message)),
          param(std::move(param)),
          type(std::move(type)),
          code(std::move(code)) {}
    int status;
    std::string message, param, type, code;
};

class Server {
  public:
    Server(Engine& engine, const Tokenizer& tokenizer, ServerOptions opt, Metrics& metrics);
    ~Server();

    // Binds host:port (port 0: a free one) and returns the port; throws when it cannot.
    int bind();
    // Serves until stop(); returns once in-flight requests have been answered.
    void run();
    // Draining: new completions get 503 (and /health 503); those already submitted go on.
    void begin_drain();
    // Completions submitted whose response is not fully written yet.
    int inflight() const;
    // Closes the listening socket and ends run() (responses still being written are cut:
    // drain first). Thread-safe, any thread.
    void stop();
    bool draining() const { return draining_; }
    // Answers one request given as raw HTTP bytes, without a socket (HttpFront::answer): the
    // response's bytes. For the fuzz targets; the engine must be running as for run().
    std::string answer(std::string_view request);

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
    std::atomic<bool> draining_{false};
};

}  // namespace meshlm
