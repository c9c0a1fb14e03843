// Checkpoint averaging (LAWA, Kaddour 2022; train.average.every / train.average.last): every
// `every` steps a snapshot of the fp32 master weights joins a window of the newest `last`
// snapshots, and RUN_DIR/model.avg.safetensors holds their mean, written with each checkpoint
// and at the end in model.safetensors' format and metadata. A sliding window, not an EMA.
//
// Each rank keeps snapshots of its own chunk of its own tensor-parallel shard only (the part a
// sharded checkpoint holds: Learner::local_chunk), at any ZeRO stage, and the mean is written
// the way the final weights are (final_weights.h): no rank holds the whole model. The window is
// part of the checkpoint: each rank writes its snapshots beside the checkpoint's files as
// average-d<d>-m<m>.safetensors, so a run resumed at the same mesh writes the same
// model.avg.safetensors bytes as one that was never stopped.
//
// exports: WeightAverage, average_window_file
#pragma once

#include <cstddef>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "meshlm/model/model_config.h"
#include "meshlm/parallel/mesh.h"
#include "meshlm/train/learner.h"
#include "meshlm/train/train_config.h"

namespace meshlm {

// The window file of mesh position (d, m) in a checkpoint directory.
std::string average_window_file(const std::string& checkpoint_dir, int d, int m);

class WeightAverage {
  public:
    // Off (every call does nothing) when tc.average_every is 0.
    WeightAverage(const TrainConfig& tc, const ModelConfig& model, const DeviceMesh& mesh,
                  Learner& learner);
    bool on() const { return every_ > 0; }

    // The window saved with checkpoint `dir` (collective). Returns a note for the console
    // when it cannot continue it (saved at another mesh, or not at all) and starts empty.
    std::string restore(const std::string& dir);
    // After step `done` was applied: a snapshot when `done` is a multiple of `every`.
    void after_step(long done);
    // A rollback to the checkpoint of `step`: the snapshots taken after it are forgotten.
    void drop_after(long step);
    // After the checkpoint `dir` of step `step` was written (collective): the window into it,
    // then RUN_DIR/model.avg.safetensors (returns write_weights' line). A failure throws, or
    // with `keep_going` (checkpoint.on_error=continue) becomes the warning returned.
    std::string after_checkpoint(const std::string& dir, const std::string& run_dir, long step,
                                 bool keep_going);
    // Writes RUN_DIR/model.avg.safetensors with `metadata` (collective) unless the window is
    // empty or the file already holds this window with this metadata. Returns a line for the
    // console ("" when nothing was written).
    std::string write_weights(const std::string& run_dir,
                              const std::map<std::string, std::string>& metadata);

    // Steps of the snapshots in the window, oldest first.
    std::vector<long> steps() const;

  private:
    struct Snapshot {
        long step;
        std::vector<float> params;  // this rank's chunk
    };
    // The window's mean of this rank's chunk: a double sum, oldest snapshot first, so that
    // the same window gives the same bits.
    std::vector<float> mean() const;
    void save_window(const std::string& dir) const;
    // CRC-32 of the snapshots' bytes, oldest first: saved with the window (its file is written
    // after trainer.json, whose CRCs do not cover it) and checked when it is restored.
    static std::string window_crc(const std::deque<Snapshot>& window);

    int every_, last_;
    ModelConfig model_;
    const DeviceMesh& mesh_;
    Learner& learner_;
    std::size_t begin_ = 0, count_ = 0;  // this rank's chunk of its local layout
    std::deque<Snapshot> window_;
    // What the model.avg.safetensors last written holds: its newest snapshot and metadata.
    long written_step_ = -1;
    std::map<std::string, std::string> written_meta_;
};

}  // namespace meshlm
