// The thread count a training run computes with: train.threads, or every CPU this rank may use.
// Training keeps that count even when other processes are busy, because its sums (and so its
// losses and weights) depend on the thread count.
//
// exports: training_threads
#pragma once

#include <iosfwd>

#include "meshlm/parallel/comm.h"
#include "meshlm/train/train_config.h"

namespace meshlm {

// Sets the process's thread count and returns it: train.threads when > 0; with several ranks,
// this rank's share of its CPUs; else every available CPU, with a note on `out` when other
// processes keep some of them busy (and how to leave those alone).
int training_threads(const TrainConfig& tc, Comm& world, std::ostream& out);

}  // namespace meshlm
