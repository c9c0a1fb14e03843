// meshlm serve --checkpoint RUN_DIR [--host 127.0.0.1] [--port 8080] [--api-key KEY] [limits]
//
// An OpenAI-compatible completion server (infer/server.h) over the continuous-batching engine
// (infer/engine.h). Prints `listening on http://HOST:PORT` once it accepts connections.
// SIGTERM or SIGINT: refuse new completions (503), finish the ones in flight (at most
// --drain-timeout seconds, then they end with finish_reason "cancelled"), exit 0. A second signal
// exits at once.
#include <sys/resource.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "meshlm/cli/commands.h"
#include "meshlm/cli/overrides.h"
#include "meshlm/cli/run_dir.h"
#include "meshlm/cli/validators.h"
#include "meshlm/core/error.h"
#include "meshlm/core/signal_thread.h"
#include "meshlm/core/threads.h"
#include "meshlm/infer/server.h"
#include "meshlm/kernels/device.h"
#include "meshlm/kernels/ops/run_device.h"
#include "meshlm/model/transformer_layout.h"

namespace meshlm {

namespace {
struct ServeArgs {
    std::string device = "auto";  // kernels::resolve_run_device
    std::string checkpoint, precision = "fp32";
    ServerOptions server;
    EngineOptions engine;
    int threads = 0;
    double drain_timeout = 30;
    bool model_name_given = false;
};

// The soft limit on open files up to the hard one (often 1024 of 500k+): --max-connections
// counts on it.
void raise_open_file_limit() {
    rlimit r{};
    if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
        r.rlim_cur = r.rlim_max;
        setrlimit(RLIMIT_NOFILE, &r);
    }
}

std::string base_name(std::string p) {
    while (p.size() > 1 && p.back() == '/') p.pop_back();
    const std::size_t s = p.rfind('/');
    return s == std::string::npos ? p : p.substr(s + 1);
}

// The options of `meshlm serve` into a.
void add_serve_options(CLI::App* cmd, ServeArgs& a) {
    cmd->add_option("--checkpoint", a.checkpoint, "run directory written by `meshlm train`")
        ->required();
    cmd->add_option("--host", a.server.host, "address to listen on")->capture_default_str();
    cmd->add_option("--port", a.server.port, "port (0 = any free port)")
        ->capture_default_str()
        ->check(in_range(0, 65535));
    cmd->add_option("--api-key", a.server.api_key,
                    "require 'Authorization: Bearer KEY' on /v1/* (default: $MESHLM_API_KEY)");
    cmd->add_option("--model-name", a.server.model_name,
                    "model id in /v1/models and responses (default: the run "
                    "directory's name)");
    cmd->add_option("--max-running", a.engine.max_running,
                    "sequences decoded together in one batch")
        ->capture_default_str()
        ->check(in_range(1, 4096));
    cmd->add_option("--max-waiting", a.engine.max_waiting,
                    "sequences queued beyond the batch (more get 503)")
        ->capture_default_str()
        ->check(in_range(0, 65536));
    cmd->add_option("--max-rows", a.engine.max_rows,
                    "tokens per forward pass: prompts are read in chunks that fill it")
        ->capture_default_str()
        ->check(in_range(1, 65536));
    cmd->add_option("--block-size", a.engine.block_size, "positions per KV cache block")
        ->capture_default_str()
        ->check(in_range(1, 4096));
    cmd->add_option("--kv-blocks", a.engine.num_blocks,
                    "KV cache blocks in the pool (0 = enough for --max-running full contexts)")
        ->capture_default_str()
        ->check(at_least(0));
    cmd->add_option("--max-body", a.server.max_body_bytes, "largest request body in bytes")
        ->capture_default_str()
        ->check(at_least(1024));
    cmd->add_option("--read-timeout", a.server.request_timeout_s,
                    "seconds a request's head and body may take to arrive (slower clients are "
                    "disconnected)")
        ->capture_default_str()
        ->check(in_range(0.1, 3600));
    cmd->add_option("--idle-timeout", a.server.idle_timeout_s,
                    "seconds a connection may wait for its next request")
        ->capture_default_str()
        ->check(in_range(0.1, 3600));
    cmd->add_option("--max-connections", a.server.max_connections,
                    "open connections (more are closed as they arrive)")
        ->capture_default_str()
        ->check(in_range(1, 1 << 20));
    cmd->add_option("--http-threads", a.server.threads,
                    "most requests read or answered at once (0 = --max-running + --max-waiting "
                    "+ 16); threads start as needed and idle ones exit")
        ->capture_default_str()
        ->check(at_least(0));
    cmd->add_option("--drain-timeout", a.drain_timeout,
                    "seconds to finish in-flight requests after SIGTERM")
        ->capture_default_str()
        ->check(at_least(0));
    cmd->add_option("--precision", a.precision,
                    "weights read by forward passes: fp32, or bf16 (half the bytes, ~3 digits)")
        ->capture_default_str()
        ->check(CLI::IsMember({"fp32", "bf16"}));
    cmd->add_option("--threads", a.threads, "compute threads (0 = all cores)")
        ->capture_default_str()
        ->check(at_least(0));
    cmd->add_option("--device", a.device,
                    "where the model runs: cpu, cuda (one GPU; Transformer-VQ and T5-bias models "
                    "are refused by name) or auto (cuda when built in, a GPU is visible and the "
                    "model runs there; else the CPU)")
        ->capture_default_str()
        ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
}

// Serves until the first signal, then drains: new completions get 503, the ones in flight
// finish (at most --drain-timeout seconds, then they are cancelled).
void serve_until_stopped(Server& server, Engine& engine, const ServeArgs& a) {
    // Signals arrive at the signal thread; this one turns the first into a drain.
    set_graceful_stop(true);
    std::atomic<bool> serving{true};
    std::thread watcher([&] {
        while (serving && stop_signal() == 0)
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        if (!serving) return;
        std::cerr << "meshlm serve: stopping: finishing " << engine.running() + engine.waiting()
                  << " sequences (at most " << a.drain_timeout << " s)" << std::endl;
        // New completions get 503 from now on; the ones in flight finish and are written,
        // then the listening socket closes (cpp-httplib's stop() cuts responses still
        // being written, so it comes last).
        server.begin_drain();
        const auto deadline =
            std::chrono::steady_clock::now() + std::chrono::duration<double>(a.drain_timeout);
        auto wait_until = [&](auto t) {
            while (serving && server.inflight() > 0 && std::chrono::steady_clock::now() < t)
                std::this_thread::sleep_for(std::chrono::milliseconds(20));
        };
        wait_until(deadline);
        if (serving && server.inflight() > 0) {
            std::cerr << "meshlm serve: drain timeout: cancelling what is left" << std::endl;
            engine.cancel_all();
            wait_until(std::chrono::steady_clock::now() + std::chrono::seconds(5));
        }
        server.stop();
    });
    server.run();
    serving = false;
    watcher.join();
    std::cerr << "meshlm serve: stopped" << std::endl;
}

int run_serve(ServeArgs& a, const std::vector<std::string>& overrides) {
    // A CPU build or a machine without a GPU is refused before the run is read.
    kernels::resolve_run_device(a.device, "--device", "");
    require_used_overrides(overrides, "meshlm serve", {"data.tokenizer"});
    if (a.server.api_key.empty())
        if (const char* k = std::getenv("MESHLM_API_KEY")) a.server.api_key = k;
    RunDir run = open_run_dir(a.checkpoint, overrides);
    if (!a.model_name_given) a.server.model_name = base_name(a.checkpoint);
    use_inference_threads(a.threads);
    const ModelConfig& cfg = run.config.model;
    Buffer<float> params(transformer_layout(cfg).total());
    load_run_weights(run, transformer_layout(cfg), params.data());
    a.engine.precision = a.precision == "bf16" ? DecodePrecision::bf16 : DecodePrecision::fp32;
    a.engine.device = run_device(run, a.device);

    std::signal(SIGPIPE, SIG_IGN);
    raise_open_file_limit();  // each waiting connection holds a descriptor
    // The chat template: a tokenizer_config.json in the run (or checkpoint's run) directory or
    // beside the tokenizer file, else the default ChatML template (chat_request.h).
    a.server.chat = load_chat_setup(chat_config_dirs(run), *run.tokenizer);
    Metrics metrics;
    Engine engine(cfg, params.data(), *run.tokenizer, a.engine, &metrics);
    Server server(engine, *run.tokenizer, a.server, metrics);
    const int port = server.bind();
    const EngineOptions& eo = engine.options();
    const double kv_mib = static_cast<double>(eo.num_blocks) * eo.block_size * cfg.n_layer * 2 *
                          cfg.d_model * sizeof(float) / (1 << 20);
    std::cerr << "meshlm serve: model " << a.server.model_name << " on "
              << kernels::device_name(eo.device) << ", context " << cfg.max_seq_len << ", batch of "
              << eo.max_running << " sequences, KV pool " << eo.num_blocks << " blocks x "
              << eo.block_size << " positions (<= " << static_cast<long>(kv_mib + 0.5)
              << " MiB), chat template " << a.server.chat.source << "\n"
              << "listening on http://" << a.server.host << ":" << port << std::endl;
    serve_until_stopped(server, engine, a);
    return 0;
}

}  // namespace

CommandRunner add_serve_command(CLI::App& app, const std::vector<std::string>& overrides) {
    auto* cmd = app.add_subcommand("serve", "Serve a model over an OpenAI-compatible HTTP API");
    auto a = std::make_shared<ServeArgs>();
    add_serve_options(cmd, *a);
    return [a, cmd, &overrides] {
        a->model_name_given = cmd->get_option("--model-name")->count() > 0;
        return run_serve(*a, overrides);
    };
}

}  // namespace meshlm
