#include "meshlm/infer/deadline_stream.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace meshlm {
namespace {
// Poll slices: a stopping server is noticed within one.
constexpr int kSliceMs = 100;

bool poll_for(int fd, short events, int ms) {
    pollfd p{fd, events, 0};
    int r;
    do r = ::poll(&p, 1, ms);
    while (r < 0 && errno == EINTR);
    return r > 0;
}

void ip_and_port(const sockaddr_storage& a, std::string& ip, int& port) {
    char buf[INET6_ADDRSTRLEN] = {};
    if (a.ss_family == AF_INET) {
        const auto* v4 = reinterpret_cast<const sockaddr_in*>(&a);
        inet_ntop(AF_INET, &v4->sin_addr, buf, sizeof buf);
        port = ntohs(v4->sin_port);
    } else if (a.ss_family == AF_INET6) {
        const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&a);
        inet_ntop(AF_INET6, &v6->sin6_addr, buf, sizeof buf);
        port = ntohs(v6->sin6_port);
    }
    ip = buf;
}
}  // namespace

DeadlineStream::DeadlineStream(int fd, std::chrono::milliseconds write_timeout,
                               const std::atomic<bool>* stopping)
    : fd_(fd),
      deadline_(Clock::now()),
      write_timeout_(write_timeout),
      stopping_(stopping),
      buf_(16 * 1024) {}

bool DeadlineStream::wait_readable() const {
    for (;;) {
        if (stopping_ && *stopping_) return false;
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now());
        if (left.count() <= 0) return false;
        const int ms = static_cast<int>(std::min<long long>(left.count(), kSliceMs));
        if (poll_for(fd_, POLLIN, ms)) return true;
    }
}

bool DeadlineStream::is_readable() const {
    return has_buffered() || wait_readable();
}

ssize_t DeadlineStream::read(char* ptr, size_t size) {
    if (!has_buffered()) {
        ssize_t n = -1;
        if (wait_readable()) {
            do n = ::recv(fd_, buf_.data(), buf_.size(), 0);
            while (n < 0 && errno == EINTR);
        }
        if (n <= 0) {
            read_failed_ = true;
            return n;
        }
        begin_ = 0;
        end_ = static_cast<std::size_t>(n);
    }
    const std::size_t n = std::min(size, end_ - begin_);
    std::memcpy(ptr, buf_.data() + begin_, n);
    begin_ += n;
    return static_cast<ssize_t>(n);
}

bool DeadlineStream::is_writable() const {
    return poll_for(fd_, POLLOUT, static_cast<int>(write_timeout_.count()));
}

ssize_t DeadlineStream::write(const char* ptr, size_t size) {
    if (!is_writable()) return -1;
    ssize_t n;
    do n = ::send(fd_, ptr, size, MSG_NOSIGNAL);  // a gone client: EPIPE, not SIGPIPE
    while (n < 0 && errno == EINTR);
    return n;
}

void DeadlineStream::get_remote_ip_and_port(std::string& ip, int& port) const {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    if (::getpeername(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0) ip_and_port(a, ip, port);
}

void DeadlineStream::get_local_ip_and_port(std::string& ip, int& port) const {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0) ip_and_port(a, ip, port);
}

}  // namespace meshlm
