// Inference with a KV cache: decodes S sequences together, one token each per step, without
// recomputing their prefixes. It is the transformer's math from the same layers: the prompt
// pass (prefill) runs the Transformer itself and keeps every block's rotated keys and values;
// steps run each block's layers on one row per sequence with the decode kernels (skinny linear,
// single-query attention over the cache), so a step's cost is flat in the position apart from
// the O(t C) attention. The cache holds the model's key/value heads (n_kv_head of them).
//
// A Transformer-VQ model (model.attention vq) decodes with constant memory instead: each
// sequence carries, per block, its VQ attention state (the previous block's codes and values
// and the compressed cache: kernels::VqAttnState), so a step costs the same at any position and
// the text never has to slide or stop (max_seq is unbounded); a prompt runs in pieces of at most
// max_seq_len tokens.
//
// The prefill always runs in fp32: it is compute-bound and oneDNN's sgemm is fast there. With
// DecodePrecision::bf16, steps read bf16 copies of the weight matrices (made at each prefill).
//
// On a GPU (device cuda) the caches, the activations and a copy of the parameters (made at each
// prefill) live in the GPU's memory; prompts and tokens come from the host, and each pass reads
// back only the logits the caller samples from. Transformer-VQ and T5's bias decode on the CPU.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "meshlm/core/buffer.h"
#include "meshlm/model/decode_stack.h"
#include "meshlm/model/transformer.h"

namespace meshlm {

class Decoder {
  public:
    // Caches for num_seqs sequences of up to max_seq positions (0: the model's max_seq_len).
    Decoder(const ModelConfig& cfg, int num_seqs, int max_seq = 0,
            DecodePrecision precision = DecodePrecision::fp32, Device device = Device::cpu);
    ~Decoder();

    const ModelConfig& config() const { return cfg_; }
    int num_seqs() const { return S_; }
    int max_seq() const { return max_seq_; }
    int position() const { return pos_; }  // positions held by every sequence's cache
    DecodePrecision precision() const { return stack_.precision(); }
    Device device() const { return stack_.device(); }

    // Runs tokens [rows, T] in one batched pass and makes them the whole cache (positions
    // 0..T-1): rows == 1 gives every sequence the same prompt, rows == S one row each.
    // Returns the next-token logits [S, V] (host memory). params (layout of transformer_layout,
    // host memory) are read afresh.
    const float* prefill(const float* params, const std::int32_t* tokens, int T, int rows = 1);
    // Appends tokens[s] at position() to each sequence s with tokens[s] >= 0 and returns the
    // next-token logits [S, V]; sequences with tokens[s] < 0 are skipped (their cache is not
    // extended, their logits row is garbage). Needs position() < max_seq() and the params
    // given to the last prefill().
    const float* step(const float* params, const std::int32_t* tokens);
    const float* logits() const { return logits_; }  // those of the last call, host memory
    // Bytes of what the sequences carry: the KV caches, or the VQ states.
    std::size_t state_bytes() const;

  private:
    const float* vq_prefill(const float* params, const std::int32_t* tokens, int T, int rows);
    const float* vq_step(const float* params);
    // Rows m of qkv [M, W] into sequence seq[m]'s cache at position pos[m] (seq, pos: host).
    void store_kv(int layer, const float* qkv, const std::int32_t* seq, const std::int32_t* pos,
                  int M);

    ModelConfig cfg_;
    int S_, max_seq_;
    int pos_ = 0;
    const float* params_ = nullptr;           // those of the last prefill
    DecodeStack stack_;                       // rows: the active sequences
    const float* run_params_ = nullptr;       // params_ where the device reads them
    const float* logits_ = nullptr;           // the last call's logits, host memory
    std::vector<kernels::FloatArray> k_, v_;  // per layer: [S, K, max_seq, D]
    kernels::DeviceIds seq_ids_, pos_ids_;    // store_kv's rows and positions on the device
    // The prefill's model, planned for (prompt_rows_, prompt_T_) and rebuilt for a larger prompt.
    std::unique_ptr<Transformer> prompt_;
    int prompt_rows_ = 0, prompt_T_ = 0;
    std::vector<std::int32_t> active_, pos_rows_, step_tokens_;
    kernels::DeviceIds active_ids_;  // active_ on the device
    // VQ: states[l * S + s]; the active rows' states during a step; their tokens.
    std::vector<kernels::VqAttnState> vq_states_, vq_active_;
    std::vector<std::int32_t> vq_tokens_;
};

}  // namespace meshlm
