// The HTTP server under `meshlm serve`: cpp-httplib's request parsing and routing, with its
// connection handling replaced so that hostile or unlucky clients cost bounded resources.
//
// cpp-httplib 0.11 gives each connection a pool thread for its whole life, and its read timeout
// counts per recv, so a client that sends a byte every few seconds, or just connects and waits,
// holds a thread. Here a connection that waits for a request is parked (connection_parker.h, no
// thread); once its bytes arrive, a worker from an elastic pool (worker_pool.h) reads that one
// request -- head and body within `request_timeout`, whatever the pace -- answers it, and parks
// the connection again. A connection silent for `idle_timeout` is closed.
#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <string>
#include <string_view>

#include "meshlm/infer/connection_parker.h"
#include "meshlm/infer/worker_pool.h"

namespace meshlm {

struct HttpLimits {
    int min_workers = 2;                 // threads kept while idle
    int max_workers = 64;                // requests read or answered at once
    double request_timeout_s = 10;       // a request's head and body must arrive within it
    double idle_timeout_s = 5;           // a connection waits this long for its next request
    double write_timeout_s = 30;         // a client that takes no bytes this long is dropped
    std::size_t max_connections = 4096;  // open connections; more are closed as they arrive
    int keep_alive_max = 1000;           // requests on one connection before it is closed
};

class HttpFront : public httplib::Server {
  public:
    explicit HttpFront(HttpLimits limits);
    ~HttpFront() override;

    // Ends listen_after_bind() -- or, called before it (a server stopped as soon as it is
    // started), makes it return at once. httplib's own stop() does nothing until the accept loop
    // has begun, so the loop would then wait for a connection forever. Any thread.
    void stop_listening();
    // Once listen_after_bind() has returned: closes waiting connections, finishes the requests
    // being read or answered (reads give up at once) and joins the workers.
    void finish();
    // Answers the request in `request` (raw HTTP bytes) as a connection would -- httplib's
    // parsing, the Content-Length check, the routes -- without a socket, on the calling thread;
    // returns the response's bytes. For the fuzz targets (fuzz/serve_http.cpp).
    std::string answer(std::string_view request);
    // Connections waiting for a request, and worker threads alive.
    std::size_t idle_connections() const { return parker_.parked(); }
    std::size_t open_connections() const { return open_; }
    int worker_threads() const { return pool_.threads(); }

  private:
    // Called by httplib's accept loop for each new socket (through a queue that runs it
    // inline): parks it and returns.
    bool process_and_close_socket(socket_t sock) override;
    void serve(const std::shared_ptr<HttpConnection>& c);
    void park(std::shared_ptr<HttpConnection> c);

    HttpLimits limits_;
    std::atomic<bool> stopping_{false};
    std::atomic<std::size_t> open_{0};
    WorkerPool pool_;
    ConnectionParker parker_;
};

}  // namespace meshlm
