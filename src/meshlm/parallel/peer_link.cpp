#include "meshlm/parallel/peer_link.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace meshlm {
namespace {

constexpr std::uint32_t kHelloMagic = 0x4d4c5057;  // "MLPW"

struct Hello {
    std::uint32_t magic = kHelloMagic;
    std::int32_t rank = -1;
};

std::string errno_text(const char* what) {
    return std::string(what) + ": " + std::strerror(errno);
}

// Probes after 5 s of silence, every 2 s, 4 times: a dead host is noticed within ~13 s.
void set_keepalive(int fd) {
    int on = 1, idle = 5, interval = 2, count = 4;
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
}

int ms_left(std::chrono::steady_clock::time_point deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    return left.count() > 0 ? static_cast<int>(left.count()) : 0;
}

// Reads exactly `n` bytes before `deadline`.
bool read_full(int fd, void* buf, std::size_t n, std::chrono::steady_clock::time_point deadline) {
    auto* p = static_cast<char*>(buf);
    while (n > 0) {
        pollfd pfd{fd, POLLIN, 0};
        if (poll(&pfd, 1, ms_left(deadline)) <= 0) return false;
        const ssize_t got = read(fd, p, n);
        if (got <= 0) return false;
        p += got, n -= static_cast<std::size_t>(got);
    }
    return true;
}

// Connects to ip:port within `timeout_ms`; -1 on failure.
int connect_one(std::uint32_t ip, std::uint16_t port, int timeout_ms) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return -1;
    sockaddr_in sa{};
    sa.sin_family = AF_INET, sa.sin_port = port, sa.sin_addr.s_addr = ip;
    int rc = connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
    if (rc != 0 && errno == EINPROGRESS) {
        pollfd pfd{fd, POLLOUT, 0};
        int soerr = 0;
        socklen_t len = sizeof soerr;
        if (poll(&pfd, 1, timeout_ms) == 1 &&
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) == 0 && soerr == 0)
            rc = 0;
    }
    if (rc != 0) {
        close(fd);
        return -1;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return fd;
}

}  // namespace

int hub_listen(int backlog, HubAddress& addr, std::string& err) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return err = errno_text("socket"), -1;
    sockaddr_in sa{};
    sa.sin_family = AF_INET, sa.sin_addr.s_addr = htonl(INADDR_ANY), sa.sin_port = 0;
    socklen_t len = sizeof sa;
    if (bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 || listen(fd, backlog) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0) {
        err = errno_text("bind/listen");
        close(fd);
        return -1;
    }
    addr.port = sa.sin_port;
    ifaddrs* list = nullptr;
    if (getifaddrs(&list) == 0) {
        // Addresses other hosts can reach first; loopback (same host only) last.
        for (bool loop : {false, true})
            for (ifaddrs* i = list; i; i = i->ifa_next) {
                if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP))
                    continue;
                if (((i->ifa_flags & IFF_LOOPBACK) != 0) != loop || addr.count == 14) continue;
                addr.ip[addr.count++] =
                    reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr;
            }
        freeifaddrs(list);
    }
    if (addr.count == 0) addr.ip[addr.count++] = htonl(INADDR_LOOPBACK);
    return fd;
}

bool hub_accept(int listen_fd, int n_ranks, double timeout_s, std::vector<int>& fds,
                std::string& err) {
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::milliseconds>(
                                               std::chrono::duration<double>(timeout_s));
    fds.assign(static_cast<std::size_t>(n_ranks), -1);
    for (int linked = 1; linked < n_ranks;) {
        pollfd pfd{listen_fd, POLLIN, 0};
        if (poll(&pfd, 1, ms_left(deadline)) <= 0)
            return err = "only " + std::to_string(linked - 1) + " of " +
                         std::to_string(n_ranks - 1) + " ranks connected to rank 0",
                   false;
        const int fd = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) continue;
        Hello h;
        if (!read_full(fd, &h, sizeof h, deadline) || h.magic != kHelloMagic || h.rank <= 0 ||
            h.rank >= n_ranks || fds[static_cast<std::size_t>(h.rank)] >= 0) {
            close(fd);  // not one of ours
            continue;
        }
        set_keepalive(fd);
        fds[static_cast<std::size_t>(h.rank)] = fd;
        ++linked;
    }
    return true;
}

int spoke_connect(const HubAddress& addr, int rank, double timeout_s, std::string& err) {
    if (addr.port == 0) return err = "rank 0 could not listen", -1;
    for (std::uint16_t i = 0; i < addr.count && i < 14; ++i) {
        const int fd = connect_one(addr.ip[i], addr.port, static_cast<int>(timeout_s * 1000));
        if (fd < 0) continue;
        Hello h;
        h.rank = rank;
        if (write(fd, &h, sizeof h) != static_cast<ssize_t>(sizeof h)) {
            close(fd);
            continue;
        }
        set_keepalive(fd);
        return fd;
    }
    char ip[INET_ADDRSTRLEN] = "?";
    inet_ntop(AF_INET, &addr.ip[0], ip, sizeof ip);
    err = "rank " + std::to_string(rank) + " cannot reach rank 0 at " + ip + ":" +
          std::to_string(ntohs(addr.port)) + " (nor " + std::to_string(addr.count - 1) +
          " other addresses)";
    return -1;
}

}  // namespace meshlm
