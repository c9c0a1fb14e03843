// serve_fixture.h: a tiny in-process server, and the 500 check on its answers.
#include "serve_fixture.h"

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "meshlm/core/threads.h"
#include "meshlm/infer/server.h"
#include "meshlm/model/transformer_layout.h"

namespace meshlm::fuzz {
namespace {

struct ServeFixture {
    ModelConfig cfg;
    std::vector<float> params;
    ByteTokenizer tok;
    Metrics metrics;
    std::unique_ptr<Engine> engine;
    std::unique_ptr<Server> server;

    ServeFixture() {
        set_thread_count(1);
        cfg.n_layer = 1;
        cfg.d_model = 16;
        cfg.n_head = 2;
        cfg.vocab_size = 257;
        cfg.max_seq_len = 32;
        cfg.position = "rope";
        const ParamLayout layout = transformer_layout(cfg);
        params.resize(layout.total());
        init_params(cfg, layout, params.data(), 11);
        EngineOptions eo;
        eo.max_running = 4;
        eo.max_waiting = 8;
        eo.threads = 1;
        engine = std::make_unique<Engine>(cfg, params.data(), tok, eo, &metrics);
        ServerOptions so;
        so.port = 0;
        so.model_name = "tiny";
        so.api_key = "fuzz-key";
        so.threads = 2;
        server = std::make_unique<Server>(*engine, tok, so, metrics);
    }
};

}  // namespace

std::string serve_answer(std::string_view request) {
    static ServeFixture* fx = new ServeFixture;  // never destroyed: its engine thread lives on
    std::string res = fx->server->answer(request);
    if (res.starts_with("HTTP/1.1 500")) {
        std::fprintf(stderr, "fuzz finding: the server answered 500:\n%s\n", res.c_str());
        std::abort();
    }
    return res;
}

}  // namespace meshlm::fuzz
