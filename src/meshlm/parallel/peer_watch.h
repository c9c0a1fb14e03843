// PeerWatch: when another rank's process is lost (SIGKILL, the OOM killer, a crash, its host
// going away), every remaining rank ends at once, non-zero, with one line naming the lost rank
// and what this rank was doing (parallel/rank_activity.h), instead of sitting in a collective
// until the launcher kills it without a word (Open MPI's mpirun: SIGTERM, then SIGKILL 2 s
// later) or until the collective timeout (MESHLM_COMM_TIMEOUT) passes:
//
//   error: rank 0/2: lost rank 1 (pid 4242 on node7): its process ended while this rank was in
//   all_reduce in training step 5; the job cannot go on without it and ends here. ...
//
// How: every rank holds a TCP link to rank 0, made at start-up (parallel/peer_link.h). The
// kernel closes a process's sockets however it ends, so rank 0 sees a rank's end at once and
// tells the others which rank it was; the others see rank 0's own end on their link. A host
// that vanishes without closing anything is found by TCP keep-alive (about 15 s). A rank that
// leaves on purpose says so first, and its end is then no loss: a clean exit (the destructor)
// or a failure it reports itself (announce_failure(), called by parallel/failure.h).
//
// Works wherever ranks reach rank 0 over IPv4 TCP, on one host or many. If the links cannot be
// made, rank 0 warns and the job runs without the watch. MESHLM_PEER_WATCH=0 turns it off.
#pragma once

#include <memory>

#include "meshlm/parallel/comm.h"

namespace meshlm {

class PeerWatch {
  public:
    // Collective over `world`; does nothing on one rank.
    explicit PeerWatch(Comm& world);
    ~PeerWatch();  // a clean leave: the peers are told first
    PeerWatch(const PeerWatch&) = delete;
    PeerWatch& operator=(const PeerWatch&) = delete;

    bool active() const;

    // This rank is failing and reports why itself: the peers (through rank 0) stay quiet about
    // its end and the job's. Safe to call without a watch.
    static void announce_failure();

    struct State;

  private:
    std::unique_ptr<State> state_;
};

}  // namespace meshlm
