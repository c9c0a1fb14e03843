// Where the HTTP server's connections wait for their next request without holding a thread: one
// epoll thread watches them all, hands a connection whose bytes have arrived (or that the client
// closed) to `wake`, and closes one that stays silent past its deadline. So a thousand idle
// connections cost file descriptors, not threads, and cannot starve a real request.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "meshlm/infer/deadline_stream.h"

namespace meshlm {

// One accepted socket; closed when its last owner lets go. `open` counts the live ones.
struct HttpConnection {
    HttpConnection(int fd, std::chrono::milliseconds write_timeout,
                   const std::atomic<bool>* stopping, std::atomic<std::size_t>* open)
        : fd(fd), stream(fd, write_timeout, stopping), open(open) {
        ++*open;
    }
    ~HttpConnection();
    HttpConnection(const HttpConnection&) = delete;
    HttpConnection& operator=(const HttpConnection&) = delete;

    int fd;
    DeadlineStream stream;
    int requests = 0;  // answered on this connection
    std::atomic<std::size_t>* open;
};

class ConnectionParker {
  public:
    using Clock = std::chrono::steady_clock;
    using Wake = std::function<void(std::shared_ptr<HttpConnection>)>;

    ConnectionParker(Wake wake, std::size_t max_parked);
    ~ConnectionParker();  // closes the connections still parked

    // Watches `c` until it is readable (then wake(c)) or the deadline passes (then it is
    // closed). False when `max_parked` connections already wait: the caller drops `c`.
    bool park(std::shared_ptr<HttpConnection> c, Clock::time_point deadline);
    std::size_t parked() const;
    // Ends the watching thread and closes every parked connection.
    void stop();

  private:
    struct Parked {
        std::shared_ptr<HttpConnection> conn;
        Clock::time_point deadline;
    };
    void loop();
    void wake_ready(int fd);
    void expire(Clock::time_point now);

    Wake wake_;
    const std::size_t max_parked_;
    int epoll_fd_;
    mutable std::mutex mu_;
    std::unordered_map<int, Parked> parked_;
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

}  // namespace meshlm
