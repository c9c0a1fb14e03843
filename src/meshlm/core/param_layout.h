// The registry of named parameter slices over one flat buffer, with the facts about each tensor
// that everything outside the model works from. Gradients and optimizer moments use the same
// layout, so one offset names a parameter in all of them. The model fills the registry when it
// lays itself out; sharding (parallel/), the optimizer (optim/) and checkpoints read the facts
// -- unit, tensor-parallel split, decay, init rule -- and never match parameter names.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "meshlm/core/tensor.h"

namespace meshlm {

// How tensor parallelism over M model ranks cuts a tensor.
enum class TpSplit {
    replicated,  // every model rank holds the whole tensor
    rows,        // dim 0: each section of dim 0 (q | k | v, gate | up; one section by default)
                 // is cut into M blocks of ceil(section / M) rows; a block past the end is
                 // zero padding (a vocabulary that does not divide)
    columns,     // dim 1 cut into M equal blocks (row-parallel weights)
};

// How a tensor starts (the model's init rule resolved per tensor). truncated_normal: N(0, std)
// redrawn outside +-2 std, without rescaling (haiku's TruncatedNormal, GPT-J's init): its draws
// have std 0.880 std.
enum class InitRule { normal, zeros, ones, truncated_normal };

struct ParamSlice {
    std::string name;    // meshlm names (GPT-2's HF names for what GPT-2 has); weights [out, in]
    Shape shape;         // as held in this layout (a tensor-parallel shard's local shape)
    std::size_t offset;  // in floats from the start of the flat buffer
    std::size_t numel;
    int layer;  // block index, -1 outside the blocks
    int unit;   // what FSDP gathers together and the gradient reducer starts together:
                // 0 = embeddings, 1 + l = block l, last = final norm and head
    TpSplit split = TpSplit::replicated;
    std::vector<std::int64_t> sections;  // rows split: dim-0 section sizes of the full tensor
    Shape full_shape;                    // the unsharded shape
    bool decay = false;                  // matrices: weight decay applies (optim.decay_mask)
    InitRule init = InitRule::zeros;
    float init_std = 0;  // InitRule::normal, truncated_normal
    // muP's role: "embedding" (input weights), "hidden" (matrices between widths), "readout"
    // (the output head's matrix) or "vector" (norm gains, biases); optim.mup_rule scales each
    // role's learning rate.
    std::string mup_role;
    std::int64_t init_zero_rows = 0;  // the first rows of the full tensor start at 0 (mup.q_init)
    // Elements [begin, end) of the slice whose true gradient is identically zero (the attention
    // key bias without rotary positions: softmax ignores a shift shared by all keys). Backward
    // leaves rounding noise there, which AdamW would turn into lr-sized steps; it is zeroed.
    std::size_t null_grad_begin = 0, null_grad_end = 0;
    // A running statistic, not a trained weight (Transformer-VQ's codebook sums and counts):
    // backward leaves the batch's statistic in the gradient slot, summed like a gradient over
    // micro-batches and data ranks, and the trainer folds it in as p = decay p + (1 - decay) g
    // (ema_update) before clipping. No optimizer step, decay or clipping touches it. 0 = a weight.
    float ema_decay = 0.f;
    // Index of the slice in the full (unsharded) layout: its init stream and file position.
    int index = 0;
    bool is_matrix() const { return shape.ndim == 2; }
};

class ParamLayout {
  public:
    // Appends a slice (name, shape, layer, unit and facts from `s`; offset and numel are set
    // here). Offsets are 16-float aligned so every slice starts on a cache line. Units must be
    // appended in order, each contiguous.
    const ParamSlice& add(ParamSlice s);
    // A slice with default facts (tests, file formats): unit = layer + 1.
    const ParamSlice& add(const std::string& name, Shape shape, int layer);
    const std::vector<ParamSlice>& slices() const { return slices_; }
    // Throws meshlm::Error naming the parameter when absent.
    const ParamSlice& at(const std::string& name) const;
    const ParamSlice* find(const std::string& name) const;
    std::size_t total() const { return total_; }  // floats, padding included
    std::size_t count() const;                    // parameters, padding excluded

    int unit_count() const { return slices_.empty() ? 0 : slices_.back().unit + 1; }
    // [begin, end) of a unit in the flat buffer (the alignment padding between its slices
    // included).
    std::pair<std::size_t, std::size_t> unit_range(int unit) const;
    // Slice indices [first, last) of a unit.
    std::pair<std::size_t, std::size_t> unit_slices(int unit) const;

  private:
    std::vector<ParamSlice> slices_;
    std::vector<std::pair<std::size_t, std::size_t>> units_;  // slice index ranges
    std::size_t total_ = 0;
};

// Calls f(full_offset, local_offset, length) for each contiguous piece of a tensor that model
// rank `rank` of `model` holds (offsets in elements within the full tensor and within the local
// shard), from the slice's split facts.
template <typename F>
void tp_for_each_piece(const ParamSlice& full, int model, int rank, F&& f);

// The local shape of a full tensor under its split.
Shape tp_local_shape(const ParamSlice& full, int model);
// Rows of the local block of a section of `rows` rows split over `model` ranks.
inline std::int64_t tp_block_rows(std::int64_t rows, int model) {
    return (rows + model - 1) / model;
}

template <typename F>
void tp_for_each_piece(const ParamSlice& s, int M, int r, F&& f) {
    const auto rows = static_cast<std::size_t>(s.full_shape.dims[0]);
    const auto cols = static_cast<std::size_t>(s.full_shape.ndim == 2 ? s.full_shape.dims[1] : 1);
    switch (s.split) {
        case TpSplit::replicated:
            f(std::size_t{0}, std::size_t{0}, rows * cols);
            break;
        case TpSplit::rows: {
            std::size_t full_row = 0, local_row = 0;
            const std::vector<std::int64_t> one{static_cast<std::int64_t>(rows)};
            for (std::int64_t sec : s.sections.empty() ? one : s.sections) {
                const auto n = static_cast<std::size_t>(sec);
                const auto bl = static_cast<std::size_t>(tp_block_rows(sec, M));
                const std::size_t lo = std::min(n, r * bl), hi = std::min(n, lo + bl);
                if (hi > lo) f((full_row + lo) * cols, local_row * cols, (hi - lo) * cols);
                full_row += n;
                local_row += bl;
            }
            break;
        }
        case TpSplit::columns: {
            const std::size_t cl = cols / M;
            for (std::size_t i = 0; i < rows; ++i) f(i * cols + r * cl, i * cl, cl);
            break;
        }
    }
}

}  // namespace meshlm

namespace meshlm {
// grads[null_grad ranges of every slice] = 0 (see ParamSlice::null_grad_begin) on the flat
// range [begin, end) of a buffer laid out by `layout`, `grads` pointing at element `begin` (a
// ZeRO chunk, or the whole buffer). Returns the largest magnitude removed.
float zero_null_grads(const ParamLayout& layout, float* grads, std::size_t begin, std::size_t end);
// The moving averages (ParamSlice::ema_decay) over the flat range [begin, end) of params and
// grads (laid out by `layout`, pointing at element `begin`): p = decay p + (1 - decay) g, then
// g = 0, so the optimizer and the gradient norm see nothing there.
void ema_update(const ParamLayout& layout, float* params, float* grads, std::size_t begin,
                std::size_t end);
}  // namespace meshlm
