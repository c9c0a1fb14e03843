// The TCP links of the peer watch (parallel/peer_watch.h): rank 0 (the hub) listens on a port
// of every IPv4 address it has, every other rank (a spoke) connects to the first address that
// answers and says which rank it is. Each link has TCP keep-alive, so a host that vanishes
// without closing its sockets is noticed within about 15 s. IPv4 only. Nothing here throws:
// a failure comes back as text, and the ranks then run without the watch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace meshlm {

// What the hub broadcasts: its port and addresses (network byte order), loopback last.
struct HubAddress {
    std::uint16_t port = 0;  // 0: the hub could not listen
    std::uint16_t count = 0;
    std::uint32_t ip[14] = {};
};

// A listening socket (-1 and `err` on failure); fills `addr`.
int hub_listen(int backlog, HubAddress& addr, std::string& err);

// Accepts the links of ranks 1..n_ranks-1 within `timeout_s`: fds[r] is rank r's (fds[0] = -1).
bool hub_accept(int listen_fd, int n_ranks, double timeout_s, std::vector<int>& fds,
                std::string& err);

// This rank's link to the hub (-1 and `err` when no address answers within `timeout_s` each).
int spoke_connect(const HubAddress& addr, int rank, double timeout_s, std::string& err);

}  // namespace meshlm
