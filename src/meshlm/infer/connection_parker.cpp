#include "meshlm/infer/connection_parker.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "meshlm/core/error.h"

namespace meshlm {
namespace {
// How often deadlines are checked and a stop is noticed.
constexpr int kTickMs = 100;
}  // namespace

HttpConnection::~HttpConnection() {
    ::shutdown(fd, SHUT_RDWR);
    ::close(fd);
    --*open;
}

ConnectionParker::ConnectionParker(Wake wake, std::size_t max_parked)
    : wake_(std::move(wake)), max_parked_(max_parked), epoll_fd_(::epoll_create1(EPOLL_CLOEXEC)) {
    if (epoll_fd_ < 0) MESHLM_INVALID("epoll_create1 failed: ", std::strerror(errno));
    thread_ = std::thread([this] { loop(); });
}

ConnectionParker::~ConnectionParker() {
    stop();
    ::close(epoll_fd_);
}

bool ConnectionParker::park(std::shared_ptr<HttpConnection> c, Clock::time_point deadline) {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_ || parked_.size() >= max_parked_) return false;
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.fd = c->fd;
    if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, c->fd, &ev) != 0) return false;
    const int fd = c->fd;
    parked_.emplace(fd, Parked{std::move(c), deadline});
    return true;
}

std::size_t ConnectionParker::parked() const {
    std::lock_guard<std::mutex> lock(mu_);
    return parked_.size();
}

void ConnectionParker::stop() {
    if (!stop_.exchange(true) && thread_.joinable()) thread_.join();
    std::unordered_map<int, Parked> closing;
    {
        std::lock_guard<std::mutex> lock(mu_);
        closing.swap(parked_);
    }
    // (closing's connections close here, outside the lock)
}

void ConnectionParker::loop() {
    std::vector<epoll_event> events(256);
    Clock::time_point scanned = Clock::now();
    while (!stop_) {
        const int n =
            ::epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), kTickMs);
        for (int i = 0; i < n; ++i) wake_ready(events[i].data.fd);
        // Deadlines are whole seconds: one scan a tick is exact enough and costs little.
        const Clock::time_point now = Clock::now();
        if (now - scanned >= std::chrono::milliseconds(kTickMs)) {
            expire(now);
            scanned = now;
        }
    }
}

// Out of the watch list and on to a worker.
void ConnectionParker::wake_ready(int fd) {
    std::shared_ptr<HttpConnection> c;
    {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = parked_.find(fd);
        if (it == parked_.end()) return;
        ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
        c = std::move(it->second.conn);
        parked_.erase(it);
    }
    wake_(std::move(c));
}

void ConnectionParker::expire(Clock::time_point now) {
    std::vector<std::shared_ptr<HttpConnection>> expired;
    {
        std::lock_guard<std::mutex> lock(mu_);
        for (auto it = parked_.begin(); it != parked_.end();) {
            if (it->second.deadline > now) {
                ++it;
                continue;
            }
            ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, it->first, nullptr);
            expired.push_back(std::move(it->second.conn));
            it = parked_.erase(it);
        }
    }
    // (they close here, outside the lock)
}

}  // namespace meshlm
