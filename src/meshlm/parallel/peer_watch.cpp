#include "meshlm/parallel/peer_watch.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "meshlm/core/signal_thread.h"
#include "meshlm/parallel/peer_link.h"
#include "meshlm/parallel/rank_activity.h"

namespace meshlm {
namespace {

// Who each rank is, for the message.
struct PeerInfo {
    std::int32_t pid = 0;
    char host[60] = {};
};

// Messages on a link: one byte, 'L' (hub to spoke) followed by the lost rank (int32).
constexpr char kBye = 'B', kFail = 'F', kLost = 'L';
constexpr int kExitLost = 1;  // a failure while running (README "Exit codes")

void send_bytes(int fd, const void* data, std::size_t n) {
    if (fd >= 0) (void)send(fd, data, n, MSG_NOSIGNAL | MSG_DONTWAIT);
}

}  // namespace

struct PeerWatch::State {
    int rank = 0, size = 1;
    std::vector<PeerInfo> peers;
    std::vector<int> fds;            // by rank: the hub holds 1..N-1, a spoke only 0 (the hub)
    std::vector<std::string> inbox;  // by rank: bytes received, not yet handled
    std::vector<char> left;          // by rank: said it leaves (bye or failure): no loss
    std::vector<char> ended;         // by rank: its link has ended (kept open until the end)
    std::atomic<bool> quiet{false};  // a failure is being reported: losses are expected
    int wake[2] = {-1, -1};
    std::thread thread;

    bool hub() const { return rank == 0; }
    void send_all(const void* data, std::size_t n, int except = -1) {
        for (int r = 0; r < size; ++r)
            if (r != except) send_bytes(fds[static_cast<std::size_t>(r)], data, n);
    }
};

namespace {

std::atomic<PeerWatch::State*> g_watch{nullptr};

// One line on stderr (a plain write: no lock another thread may hold), then the exit.
[[noreturn]] void report_loss(PeerWatch::State& st, int lost, const char* how) {
    const PeerInfo& p = st.peers[static_cast<std::size_t>(lost)];
    const std::string line =
        "error: rank " + std::to_string(st.rank) + "/" + std::to_string(st.size) + ": lost rank " +
        std::to_string(lost) + " (pid " + std::to_string(p.pid) + " on " + p.host + "): " + how +
        " while this rank was in " + describe(rank_activity()) +
        "; the job cannot go on without it and ends here. The checkpoints written so far are "
        "intact: run the same command with --config.checkpoint.resume=auto (or --resume RUN_DIR) "
        "to continue from the last one, on this layout or another\n";
    (void)!write(STDERR_FILENO, line.data(), line.size());
    std::_Exit(kExitLost);
}

// A link ended without a word: the hub first tells the other spokes which rank it was.
[[noreturn]] void on_loss(PeerWatch::State& st, int lost, const char* how) {
    if (st.hub()) {
        char msg[5] = {kLost};
        const std::int32_t r = lost;
        std::memcpy(msg + 1, &r, 4);
        st.send_all(msg, sizeof msg, lost);
    }
    report_loss(st, lost, how);
}

// Handles what rank `from` sent.
void handle_messages(PeerWatch::State& st, int from) {
    std::string& in = st.inbox[static_cast<std::size_t>(from)];
    std::size_t at = 0;
    while (at < in.size()) {
        const char kind = in[at];
        if (kind == kLost) {
            if (in.size() - at < 5) break;  // the rest is still on its way
            std::int32_t lost = 0;
            std::memcpy(&lost, in.data() + at + 1, 4);
            at += 5;
            if (!st.quiet && lost > 0 && lost < st.size)
                report_loss(st, lost, "its process ended (seen by rank 0)");
            continue;
        }
        ++at;
        if (kind == kBye) st.left[static_cast<std::size_t>(from)] = 1;
        if (kind == kFail) {
            st.left[static_cast<std::size_t>(from)] = 1;
            if (!st.quiet.exchange(true) && st.hub()) st.send_all(&kFail, 1, from);
        }
    }
    in.erase(0, at);
}

// One link became readable: its messages, or its end.
void read_link(PeerWatch::State& st, int r) {
    const int fd = st.fds[static_cast<std::size_t>(r)];
    char buf[256];
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) {
        st.inbox[static_cast<std::size_t>(r)].append(buf, static_cast<std::size_t>(n));
        handle_messages(st, r);
        return;
    }
    if (n < 0 && errno == EINTR) return;
    const bool timed_out = n < 0 && errno == ETIMEDOUT;
    st.ended[static_cast<std::size_t>(r)] = 1;
    if (st.left[static_cast<std::size_t>(r)] || st.quiet) return;
    on_loss(st, r, timed_out ? "its host stopped answering (TCP keep-alive)" : "its process ended");
}

void watch_loop(PeerWatch::State& st) {
    std::vector<pollfd> pfds;
    std::vector<int> who;
    for (;;) {
        pfds.assign(1, pollfd{st.wake[0], POLLIN, 0});
        who.assign(1, -1);
        for (int r = 0; r < st.size; ++r)
            if (st.fds[static_cast<std::size_t>(r)] >= 0 &&
                !st.ended[static_cast<std::size_t>(r)]) {
                pfds.push_back(pollfd{st.fds[static_cast<std::size_t>(r)], POLLIN, 0});
                who.push_back(r);
            }
        if (poll(pfds.data(), pfds.size(), -1) < 0) continue;  // EINTR
        if (pfds[0].revents) return;
        // Every link's bytes first: a bye or failure sent just before an end explains it.
        for (std::size_t i = 1; i < pfds.size(); ++i)
            if (pfds[i].revents) read_link(st, who[i]);
    }
}

// A signal that ends this process may be the launcher's reaction to a lost rank (mpirun
// sends SIGTERM to the others): give the watch the moment it needs to say which.
void before_fatal_signal(int) {
    PeerWatch::State* st = g_watch.load();
    if (!st || st->quiet) return;
    std::vector<pollfd> pfds;
    for (int fd : st->fds)
        if (fd >= 0) pfds.push_back(pollfd{fd, POLLIN, 0});
    if (poll(pfds.data(), pfds.size(), 300) > 0)
        std::this_thread::sleep_for(std::chrono::seconds(1));  // the watch reports and exits
}

// Who every rank is (pid, host).
std::vector<PeerInfo> gather_peers(Comm& world) {
    std::vector<PeerInfo> peers(static_cast<std::size_t>(world.size()));
    PeerInfo& me = peers[static_cast<std::size_t>(world.rank())];
    me.pid = static_cast<std::int32_t>(getpid());
    gethostname(me.host, sizeof me.host - 1);
    world.all_gather(reinterpret_cast<std::uint8_t*>(peers.data()), sizeof(PeerInfo));
    return peers;
}

// Every spoke connects to the hub (connections queue in the hub's backlog), then the hub
// accepts them. True on every rank when every link is up.
// `ready`: whether this rank can watch at all.
bool link_up(Comm& world, PeerWatch::State& st, bool ready, std::string& err) {
    HubAddress addr;
    int listen_fd = -1;
    if (st.hub() && ready) listen_fd = hub_listen(st.size, addr, err);
    world.broadcast_bytes(&addr, sizeof addr, 0);
    st.fds.assign(static_cast<std::size_t>(st.size), -1);
    std::int32_t ok = ready;
    if (!st.hub() && ready) {
        st.fds[0] = spoke_connect(addr, st.rank, 2.0, err);
        ok = st.fds[0] >= 0;
    }
    world.all_reduce_min(&ok, 1);
    if (st.hub() && ok) ok = hub_accept(listen_fd, st.size, 10.0, st.fds, err);
    if (listen_fd >= 0) close(listen_fd);
    world.all_reduce_min(&ok, 1);
    if (!ok && err.empty()) err = "another rank could not link up";
    return ok != 0;
}

void close_links(PeerWatch::State& st) {
    for (int& fd : st.fds)
        if (fd >= 0) close(fd), fd = -1;
}

}  // namespace

PeerWatch::PeerWatch(Comm& world) {
    const char* env = std::getenv("MESHLM_PEER_WATCH");
    if (world.size() == 1 || (env && std::string(env) == "0")) return;
    auto st = std::make_unique<State>();
    st->rank = world.rank(), st->size = world.size();
    st->peers = gather_peers(world);
    std::string err;
    const bool ready = pipe2(st->wake, O_CLOEXEC) == 0;
    if (!ready) err = std::string("pipe: ") + std::strerror(errno);
    if (!link_up(world, *st, ready, err)) {
        close_links(*st);
        if (ready) close(st->wake[0]), close(st->wake[1]);
        if (!err.empty() && (st->hub() || err.find("cannot reach") != std::string::npos))
            std::fprintf(stderr,
                         "warning: rank %d/%d: no peer watch (%s): a lost rank ends the job "
                         "only through the launcher or the collective timeout "
                         "(MESHLM_COMM_TIMEOUT)\n",
                         st->rank, st->size, err.c_str());
        return;
    }
    st->inbox.resize(static_cast<std::size_t>(st->size));
    st->left.assign(static_cast<std::size_t>(st->size), 0);
    st->ended.assign(static_cast<std::size_t>(st->size), 0);
    st->thread = std::thread(watch_loop, std::ref(*st));
    g_watch.store(st.get());
    set_fatal_signal_hook(before_fatal_signal);
    state_ = std::move(st);
}

PeerWatch::~PeerWatch() {
    if (!state_) return;
    set_fatal_signal_hook(nullptr);
    g_watch.store(nullptr);
    state_->send_all(&kBye, 1);
    (void)!write(state_->wake[1], "x", 1);
    state_->thread.join();
    close_links(*state_);
    close(state_->wake[0]), close(state_->wake[1]);
}

bool PeerWatch::active() const {
    return state_ != nullptr;
}

void PeerWatch::announce_failure() {
    State* st = g_watch.load();
    if (!st || st->quiet.exchange(true)) return;
    st->send_all(&kFail, 1);
}

}  // namespace meshlm
