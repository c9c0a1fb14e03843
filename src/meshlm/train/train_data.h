// A run's text: the tokenizer, the prepared data behind a barrier (rank 0 prepares raw inputs
// into the cache first; the others then find them there), the training loader (restored from a
// checkpoint on resume) and the bytes each token stands for (bits per byte). Synthetic data has
// no loader: its batches are drawn per step (step_batches.h).
//
// exports: TrainData, open_train_data
#pragma once

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "meshlm/data/loader.h"
#include "meshlm/data/tokenizer.h"
#include "meshlm/io/checkpoint.h"
#include "meshlm/parallel/comm.h"
#include "meshlm/train/trainer.h"

namespace meshlm {

struct TrainData {
    std::unique_ptr<Tokenizer> tokenizer;
    std::string dir;                     // the prepared directory; empty with synthetic data
    LoaderOptions options;               // the training loader's (evaluation: unshuffled)
    std::unique_ptr<DataLoader> loader;  // the training split; nullptr with synthetic data
    std::vector<std::uint32_t> token_bytes;
    bool synthetic() const { return loader == nullptr; }
};

// Collective over `world` (a barrier while rank 0 prepares). Throws InvalidInput when the
// tokenizer's or the data's vocabulary exceeds model.vocab_size, the training split has no row,
// or `resume` (may be null) was trained on synthetic data. Says what it opened on `out`.
TrainData open_train_data(const TrainJob& job, Comm& world, const TrainerState* resume,
                          std::ostream& out);

}  // namespace meshlm
