// The registry of named parameter slices over one flat buffer. Gradients and optimizer moments
// use the same layout, so one offset names a parameter in all of them; sharding strategies cut
// flat ranges, checkpoints write named tensors from the slices.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "meshlm/core/tensor.h"

namespace meshlm {

struct ParamSlice {
    std::string name;  // HF GPT-2 names ("h.3.attn.c_attn.weight"); weights stored [out, in]
    Shape shape;
    std::size_t offset;  // in floats from the start of the flat buffer
    std::size_t numel;
    int layer;  // block index, -1 for embeddings and the final LayerNorm
    bool is_matrix() const { return shape.ndim == 2; }
};

class ParamLayout {
  public:
    // Appends a slice; offsets are 16-float aligned so every slice starts on a cache line.
    const ParamSlice& add(const std::string& name, Shape shape, int layer);
    const std::vector<ParamSlice>& slices() const { return slices_; }
    // Throws meshlm::Error naming the parameter when absent.
    const ParamSlice& at(const std::string& name) const;
    const ParamSlice* find(const std::string& name) const;
    std::size_t total() const { return total_; }  // floats, padding included
    std::size_t count() const;                    // parameters, padding excluded

  private:
    std::vector<ParamSlice> slices_;
    std::size_t total_ = 0;
};

}  // namespace meshlm
