// Hyperparameters of a transformer. A family (GPT-2, GPT-J, Llama, ...) is a set of values
// here, not a class: the transformer composes its layers from them. The defaults are GPT-2's.
#pragma once

#include <cstdint>
#include <string>

namespace meshlm {

struct ModelConfig {
    int n_layer = 4;        // L
    int d_model = 128;      // C
    int n_head = 4;         // H; must divide d_model
    int n_kv_head = 0;      // K key/value heads: 0 = n_head (MHA), 1 = MQA, else GQA (divides H)
    int vocab_size = 257;   // V: 256 bytes + end-of-document for the byte tokenizer
    int max_seq_len = 128;  // rows of the position embedding (learned), longest context
    std::string block = "sequential";  // sequential | parallel (GPT-J: one norm, attn + mlp)
    std::string norm = "layernorm";    // layernorm | rmsnorm
    bool norm_bias = true;
    float norm_eps = 1e-5f;
    // learned | rope | alibi | t5_bias | none | scaled_sin (VQ)
    std::string position = "learned";
    // t5_bias (seed 003's T5 relative bias, model/t5_bias.h): buckets per head and the distance
    // from which every key shares the last bucket.
    int t5_buckets = 32;
    int t5_max_distance = 128;
    int rope_dim = 0;                 // rotary dims per head; 0 = all
    std::string rope_style = "half";  // interleaved (GPT-J) | half (NeoX, Llama)
    float rope_base = 10000.f;
    std::string rope_scaling = "none";  // none | linear | llama3
    float rope_factor = 1.f;            // linear, llama3: context extension factor
    float rope_low_freq_factor = 1.f;   // llama3
    float rope_high_freq_factor = 4.f;  // llama3
    int rope_original_max_seq = 8192;   // llama3: original_max_position_embeddings
    bool qkv_bias = true, proj_bias = true, mlp_bias = true;
    // gelu_tanh | gelu | relu | sqrelu | swiglu | geglu | none (a block without MLP: the
    // Transformer-VQ layer of two attention sublayers is two blocks of attention only)
    std::string mlp = "gelu_tanh";
    int d_ff = 0;           // F; 0 = 4 * d_model
    bool tied_head = true;  // output head = token embedding
    bool head_bias = false;
    float z_loss = 0.f;  // coefficient of the log-partition penalty z_loss * lse^2
    // A fixed factor on the head's logits (Transformer-VQ's e_scale; 0.005 with its tied
    // embeddings on PG-19): logits = logit_scale (x W^T + b). 0 = 1 / sqrt(d_model).
    float logit_scale = 1.f;
    float dropout_embd = 0.f, dropout_attn = 0.f, dropout_resid = 0.f;
    // gpt2: N(0, init_std), residual projections / sqrt(2L); fan_in: N(0, 1 / sqrt(fan_in));
    // gptj (seed 003): truncated normal (+-2 std) 1 / sqrt(fan_in), residual projections
    // (2 / L) / sqrt(d_model), position table 0.02; vq (seed 001): fan_in with N(0, 1)
    // embeddings. Biases 0, norm gains 1 under every rule.
    std::string init = "gpt2";
    float init_std = 0.02f;
    // muP (seed 002, model.mup.*): with mup_enabled the init follows the maximal-update rules
    // instead of `init` (embeddings N(0, 1), hidden matrices N(0, 1/fan_in), the readout by
    // mup_u_init) and the attention scores scale by 1/d_head; mup_d_base is the width the
    // relative learning-rate rule (optim.mup_rule) is stated at.
    bool mup_enabled = false;
    int mup_d_base = 128;
    std::string mup_u_init = "mup";     // readout: mup N(0, 1/D^2) | sp N(0, 1/D) | zero
    std::string mup_q_init = "normal";  // query rows of c_attn: normal | zero
    std::string mup_r_init = "normal";  // residual output projections: normal | zero
    float qk_scale = 0.f;  // attention score scale; 0 = 1/d_head under muP, else 1/sqrt(d_head)
    // RMSNorm (no gains, norm_eps) over each query and key head before the scores (seed 002's
    // qk_norm); it commutes with RoPE, which preserves a head's norm.
    bool qk_norm = false;
    // The attention nonlinearity (seed 002's attn_act_name): softmax, or sqrelu (relu(s)^2 /
    // max_seq_len), elu ((elu(s) + 1) / max_seq_len), norm_sqrelu / norm_elu (divided by
    // norm_eps + the row's sum instead).
    std::string attn_act = "softmax";
    // full: multi-head softmax attention over the whole context (the fields above). vq:
    // Transformer-VQ's single-head gated attention (seed 001) over vector-quantized keys in
    // linear time: blocks of vq_block_len tokens attend to themselves, the previous block and a
    // compressed cache of everything older (model/vq_attention.h).
    std::string attention = "full";
    int vq_block_len = 64;     // L
    int vq_codes = 512;        // S, the codebook size
    int vq_d_k = 128;          // query / key width
    int vq_d_v = 0;            // value and gate width; 0 = 2 * d_model
    float vq_c_beta = 1e-4f;   // commitment loss coefficient
    float vq_c_gamma = 0.99f;  // codebook EMA decay per optimizer step
    float vq_pe_lam = 1e5f;    // longest wavelength of the relative-position sinusoids
    // How each block's compressed cache is made from the blocks before it: serial (a running
    // mean, block by block) or matmul (every block's at once; kernels::VqReduction).
    std::string vq_reduction = "serial";
    // Truncated backpropagation (seed 001's legacy): rows of train.seq_len tokens train in
    // chunks of vq_update_len, one optimizer step each, the attention state carried from chunk
    // to chunk without gradient. 0 = train.seq_len (one step per batch).
    int vq_update_len = 0;
    // Warm start: weights from a meshlm run / checkpoint or a Hugging Face directory instead of
    // the init (the optimizer and schedule start fresh). Empty = random init.
    std::string init_from;
    // Depth up-scaling (Gopher G.3.3, seed 000): block l of this model starts from block map[l]
    // of init_from's, given as "0,0,1,1,..." (n_layer entries). Empty = the same blocks.
    std::string init_from_layers;

    int head_dim() const { return d_model / n_head; }
    int kv_heads() const { return n_kv_head > 0 ? n_kv_head : n_head; }
    int mlp_width() const { return mlp == "none" ? 0 : d_ff > 0 ? d_ff : 4 * d_model; }
    bool has_mlp() const { return mlp != "none"; }
    bool vq() const { return attention == "vq"; }
    int vq_value_width() const { return vq_d_v > 0 ? vq_d_v : 2 * d_model; }
    // Tokens per forward for rows of seq_len: model.vq.update_len's chunks where it cuts the rows
    // (the VQ state carries the rest of the row), else the whole row. Activations are planned
    // for this many tokens per row.
    int chunk_len(int seq_len) const {
        return vq() && vq_update_len > 0 && vq_update_len < seq_len ? vq_update_len : seq_len;
    }
    bool gated_mlp() const { return mlp == "swiglu" || mlp == "geglu"; }
    int rotary_dims() const { return rope_dim > 0 ? rope_dim : head_dim(); }
    float attention_scale() const;  // qk_scale resolved
    float head_scale() const;       // logit_scale resolved
    // Same tensor shapes (init_from and checkpoints need this, not equal init settings).
    bool same_shapes(const ModelConfig& o) const;
};

// Throws InvalidInput naming the key when the values do not make a model (heads that do not
// divide, an odd rotary width, unknown names).
void check_model_config(const ModelConfig& cfg);
// The tensor-parallel divisibility rule (core/tp_divisibility.h) for this model over `model`
// ranks: throws InvalidInput naming the width that does not divide.
void check_model_parallel(const ModelConfig& cfg, int model);

// The config decoding and scoring run: dropout acts only in training forwards, so it is off
// (and asks nothing of the device).
ModelConfig for_inference(ModelConfig cfg);

}  // namespace meshlm
