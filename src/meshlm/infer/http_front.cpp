#include "meshlm/infer/http_front.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>

namespace meshlm {
namespace {
using Clock = std::chrono::steady_clock;

std::chrono::milliseconds millis(double seconds) {
    return std::chrono::milliseconds(static_cast<long long>(seconds * 1000));
}

// Set on a worker while it answers a request whose connection must close after the answer
// (a body refused unread). Thread-local: httplib hands the request, not the connection, to
// its handlers, and a request is answered on one thread.
thread_local bool t_close_after_answer = false;

// After the answer to a request whose body was left unread: the client may still be sending
// it, and a close with unread bytes resets the connection, often before the client has read
// the answer. So the write side is shut and what arrives is dropped until the client closes,
// for at most 2 s (nginx's lingering close).
void linger(int fd) {
    ::shutdown(fd, SHUT_WR);
    char buf[16 * 1024];
    const auto until = Clock::now() + std::chrono::seconds(2);
    for (;;) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
        pollfd p{fd, POLLIN, 0};
        if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) return;
        if (::recv(fd, buf, sizeof buf, 0) <= 0) return;
    }
}

// A connection held in memory: reads come from the request's bytes, writes go to a string.
class MemoryStream : public httplib::Stream {
  public:
    explicit MemoryStream(std::string_view in) : in_(in) {}
    bool is_readable() const override { return true; }
    bool is_writable() const override { return true; }
    ssize_t read(char* ptr, size_t size) override {
        const std::size_t n = std::min(size, in_.size());
        std::copy_n(in_.data(), n, ptr);
        in_.remove_prefix(n);
        return static_cast<ssize_t>(n);
    }
    ssize_t write(const char* ptr, size_t size) override {
        out_.append(ptr, size);
        return static_cast<ssize_t>(size);
    }
    void get_remote_ip_and_port(std::string& ip, int& port) const override {
        ip = "127.0.0.1";
        port = 1;
    }
    void get_local_ip_and_port(std::string& ip, int& port) const override {
        ip = "127.0.0.1";
        port = 2;
    }
    socket_t socket() const override { return INVALID_SOCKET; }
    std::string& out() { return out_; }

  private:
    std::string_view in_;
    std::string out_;
};

// The accept loop's queue: parking a socket takes microseconds, so it runs on that thread.
class InlineQueue : public httplib::TaskQueue {
  public:
    void enqueue(std::function<void()> fn) override { fn(); }
    void shutdown() override {}
};
}  // namespace

HttpFront::HttpFront(HttpLimits limits)
    : limits_(limits),
      pool_(limits.min_workers, limits.max_workers, std::chrono::seconds(5)),
      parker_([this](std::shared_ptr<HttpConnection> c) { pool_.submit([this, c] { serve(c); }); },
              limits.max_connections) {
    new_task_queue = [] { return new InlineQueue; };
    // httplib's accept loop sets them as SO_RCVTIMEO / SO_SNDTIMEO: a send() to a client that
    // stopped reading blocks no longer than the write timeout.
    set_read_timeout(static_cast<time_t>(limits.request_timeout_s) + 1);
    set_write_timeout(static_cast<time_t>(limits.write_timeout_s));
    // What the Keep-Alive header of each answer tells the client.
    set_keep_alive_timeout(static_cast<time_t>(limits.idle_timeout_s));
    set_keep_alive_max_count(static_cast<std::size_t>(limits.keep_alive_max));
    // httplib 0.11 reads (and drops) a body over the payload limit before its 413: a client
    // announcing gigabytes would hold a worker until the read deadline. Routing comes before
    // the body is read, so the Content-Length is checked here and the body never read.
    set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
        if (req.get_header_value<std::uint64_t>("Content-Length") <= payload_max_length_)
            return HandlerResponse::Unhandled;
        res.status = 413;
        res.set_header("Connection", "close");
        t_close_after_answer = true;
        return HandlerResponse::Handled;
    });
}

HttpFront::~HttpFront() {
    finish();
}

void HttpFront::stop_listening() {
    // The accept loop runs while svr_sock_ is valid: taking the socket away ends it wherever it
    // is, and shutting it down wakes an accept() already waiting.
    const socket_t sock = svr_sock_.exchange(INVALID_SOCKET);
    if (sock == INVALID_SOCKET) return;
    ::shutdown(sock, SHUT_RDWR);
    ::close(sock);
}

void HttpFront::finish() {
    stopping_ = true;
    parker_.stop();
    pool_.shutdown();
}

bool HttpFront::process_and_close_socket(socket_t sock) {
    if (open_ >= limits_.max_connections) {  // (those waiting in the pool's queue count too)
        ::close(sock);
        return true;
    }
    // Small answers and server-sent events go out at once, not after Nagle's delay.
    int yes = 1;
    ::setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
    park(std::make_shared<HttpConnection>(sock, millis(limits_.write_timeout_s), &stopping_,
                                          &open_));
    return true;
}

void HttpFront::park(std::shared_ptr<HttpConnection> c) {
    if (stopping_ || !is_running()) return;  // c closes as it goes
    parker_.park(std::move(c), Clock::now() + millis(limits_.idle_timeout_s));
}

std::string HttpFront::answer(std::string_view request) {
    MemoryStream stream(request);
    bool closed = false;
    t_close_after_answer = false;
    process_request(stream, true, closed, nullptr);
    return std::move(stream.out());
}

// One request of a connection whose bytes have arrived; then back to the parker.
void HttpFront::serve(const std::shared_ptr<HttpConnection>& c) {
    if (stopping_) return;
    c->stream.set_read_deadline(Clock::now() + millis(limits_.request_timeout_s));
    const bool last = ++c->requests >= limits_.keep_alive_max;
    bool closed = false;
    t_close_after_answer = false;
    const bool ok = process_request(c->stream, last, closed, nullptr);
    // A request cut short (timed out, malformed, its body left unread) ends the connection:
    // the bytes that follow are not the start of a request.
    if (t_close_after_answer) return linger(c->fd);
    if (!ok || closed || last || c->stream.read_failed()) return;
    // A pipelined request is already in the stream's buffer: the socket will not wake for it.
    if (c->stream.has_buffered())
        pool_.submit([this, c] { serve(c); });
    else
        park(c);
}

}  // namespace meshlm
