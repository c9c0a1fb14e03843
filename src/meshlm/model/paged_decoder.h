// The KV-cache decoder for serving: any mix of sequences, each at its own position, in one pass.
// A pass takes rows (token, position, the sequence's block table); a sequence may bring one row
// (a decode step) or several consecutive ones (a chunk of its prompt), and rows of different
// sequences share every weight read. Keys and values live in a pool of fixed-size blocks
// [num_blocks, K, block_size, D] per layer, so memory is bounded by the pool, not by the
// number of sequences times the context.
//
// It is the transformer's math from the same layers (DecodeStack), every matrix product done by
// the decode kernels (linear_decode, attention_paged), whose rows are computed bitwise
// independently of the other rows, the batch size and the thread count: a sequence's logits do
// not depend on what it is batched with, nor on how its prompt was cut into chunks.
//
// On a GPU (device cuda) the pool, the activations and a copy of the parameters (made by
// set_params) live in the GPU's memory; the rows and block tables come from the host, and a
// pass reads back only the logits asked for.
#pragma once

#include <cstdint>
#include <vector>

#include "meshlm/core/buffer.h"
#include "meshlm/model/decode_stack.h"
#include "meshlm/model/model_config.h"

namespace meshlm {

struct DecodeRow {
    std::int32_t token;
    std::int32_t pos;            // the token's position; 0..pos-1 are in the cache already (or
                                 // earlier rows of this pass)
    const std::int32_t* blocks;  // the sequence's block table, covering position pos
    bool logits;                 // compute the next-token logits after this row
};

class PagedDecoder {
  public:
    PagedDecoder(const ModelConfig& cfg, int num_blocks, int block_size, int max_rows,
                 DecodePrecision precision = DecodePrecision::fp32, Device device = Device::cpu);

    const ModelConfig& config() const { return cfg_; }
    int num_blocks() const { return num_blocks_; }
    int block_size() const { return block_size_; }
    int max_rows() const { return stack_.max_rows(); }
    Device device() const { return stack_.device(); }
    // Bytes of keys and values per block, all layers.
    std::size_t block_bytes() const;

    // Binds the flat parameters (transformer_layout, host memory) for later passes; with bf16
    // precision, makes the bf16 copy of the weights; off the CPU, copies them to the device.
    void set_params(const float* params);
    // Runs M <= max_rows() rows: stores each row's key and value at its position and returns
    // the logits [rows with logits, V], in row order, in host memory.
    const float* forward(const DecodeRow* rows, int M);

  private:
    ModelConfig cfg_;
    int num_blocks_, block_size_;
    DecodeStack stack_;
    std::vector<kernels::FloatArray> k_, v_;  // per layer: [num_blocks, K, block_size, D]
    std::vector<std::int32_t> tokens_, pos_, lens_;
    std::vector<std::int32_t> tables_;                    // this pass's [M, n] block table
    kernels::DeviceIds tables_ids_, pos_ids_, lens_ids_;  // tables_, pos_, lens_ on the device
};

}  // namespace meshlm
