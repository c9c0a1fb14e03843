// The `model` section of the option table (config_table.h): one `.add(...)` per key, in the
// order `meshlm config --list`, the dump and the help show them, in groups of related keys.
#include "meshlm/cli/config_table.h"

namespace meshlm::config_detail {
namespace {

using ModelSection = Section<ModelConfig>;

// The shape, the block and its norms.
void add_shape_keys(ModelSection& s) {
    s.add("n_layer", &ModelConfig::n_layer, "transformer blocks (L)", at_least(1))
        .add("d_model", &ModelConfig::d_model, "model width (C)", at_least(1))
        .add("n_head", &ModelConfig::n_head, "attention heads (H); must divide d_model",
             at_least(1))
        .add("vocab_size", &ModelConfig::vocab_size,
             "vocabulary size (V); at least 257 with the byte tokenizer", at_least(2))
        .add("max_seq_len", &ModelConfig::max_seq_len, "rows of the position embedding",
             at_least(1))
        .add("n_kv_head", &ModelConfig::n_kv_head,
             "key/value heads: 0 = n_head (multi-head), 1 = multi-query, else grouped-query "
             "(divides n_head)",
             at_least(0))
        .add("block", &ModelConfig::block,
             "sequential: x += attn(norm1 x); x += mlp(norm2 x); parallel (GPT-J): x += attn(norm "
             "x) + mlp(norm x)",
             one_of({"sequential", "parallel"}))
        .add("norm", &ModelConfig::norm, "normalization", one_of({"layernorm", "rmsnorm"}))
        .add("norm_bias", &ModelConfig::norm_bias, "norms have a bias (rmsnorm usually not)")
        .add("norm_eps", &ModelConfig::norm_eps, "norm epsilon", greater_than(0))
        .add("ln_eps", &ModelConfig::norm_eps, "older name of norm_eps", greater_than(0))
        .older_name_of("norm_eps");
}

// Positions: learned, rotary (and its scaling), ALiBi, T5 biases.
void add_position_keys(ModelSection& s) {
    s.add("position", &ModelConfig::position,
          "learned table (wpe), rotary (rope), ALiBi biases, t5_bias (T5's learned bias per "
          "head and distance bucket, shared by the layers), none, or (model.attention vq) "
          "scaled_sin: a learned scale (init 0) times fixed sinusoids of the absolute position",
          one_of({"learned", "rope", "alibi", "t5_bias", "none", "scaled_sin"}))
        .add("t5.num_buckets", &ModelConfig::t5_buckets,
             "t5_bias: buckets per head; distances below half of them get one each", at_least(2))
        .add("t5.max_distance", &ModelConfig::t5_max_distance,
             "t5_bias: distance from which every key shares the last bucket", at_least(2))
        .add("rope_dim", &ModelConfig::rope_dim,
             "rotary dims per head (even); 0 = the whole head (GPT-J: 64 of 256)", at_least(0))
        .add("rope_style", &ModelConfig::rope_style,
             "rotary pairs: interleaved (2i, 2i+1) as GPT-J, or half (i, i + rope_dim/2) as "
             "NeoX, Llama",
             one_of({"interleaved", "half"}))
        .add("rope_base", &ModelConfig::rope_base, "rotary base (theta)", greater_than(0))
        .add("rope_scaling", &ModelConfig::rope_scaling,
             "context extension of the rotary frequencies", one_of({"none", "linear", "llama3"}))
        .add("rope_factor", &ModelConfig::rope_factor, "rope_scaling factor", greater_than(0))
        .add("rope_low_freq_factor", &ModelConfig::rope_low_freq_factor, "llama3 scaling",
             greater_than(0))
        .add("rope_high_freq_factor", &ModelConfig::rope_high_freq_factor, "llama3 scaling",
             greater_than(0))
        .add("rope_original_max_seq", &ModelConfig::rope_original_max_seq,
             "llama3 scaling: the original context (original_max_position_embeddings)",
             at_least(1));
}

// Biases, the MLP, the head, the loss and dropout.
void add_layer_keys(ModelSection& s) {
    s.add("qkv_bias", &ModelConfig::qkv_bias, "biases of the q, k, v projections")
        .add("proj_bias", &ModelConfig::proj_bias, "bias of the attention output projection")
        .add("mlp_bias", &ModelConfig::mlp_bias, "biases of the MLP")
        .add("mlp", &ModelConfig::mlp,
             "MLP activation; swiglu and geglu are gated (gate * up); none: blocks of attention "
             "only",
             one_of({"gelu_tanh", "gelu", "relu", "sqrelu", "swiglu", "geglu", "none"}))
        .add("d_ff", &ModelConfig::d_ff, "MLP width (F); 0 = 4 * d_model", at_least(0))
        .add("tied_head", &ModelConfig::tied_head,
             "the output head is the token embedding (false: its own lm_head matrix)")
        .add("head_bias", &ModelConfig::head_bias, "the output head has a bias (GPT-J)")
        .add("z_loss", &ModelConfig::z_loss,
             "coefficient of the log-partition penalty z * logsumexp^2 (GPT-J: 1e-4)", at_least(0))
        .add("logit_scale", &ModelConfig::logit_scale,
             "fixed factor on the output logits (Transformer-VQ's e_scale, 0.005 on PG-19); 0 = "
             "1/sqrt(d_model)",
             at_least(0))
        .add("dropout_embd", &ModelConfig::dropout_embd, "dropout rate after the embedding",
             in_closed_open(0, 1))
        .add("dropout_attn", &ModelConfig::dropout_attn,
             "dropout rate of the attention probabilities", in_closed_open(0, 1))
        .add("dropout_resid", &ModelConfig::dropout_resid, "dropout rate of each residual branch",
             in_closed_open(0, 1));
}

// Init, warm start, muP and the attention function.
void add_init_keys(ModelSection& s) {
    s.add("init", &ModelConfig::init,
          "gpt2: N(0, init_std), residual projections / sqrt(2L); fan_in: N(0, 1/sqrt(fan_in)); "
          "gptj: truncated normal (+-2 std, unscaled) 1/sqrt(fan_in), residual projections "
          "(2/L)/sqrt(d_model), wpe 0.02; vq: fan_in with N(0, 1) embeddings",
          one_of({"gpt2", "fan_in", "gptj", "vq"}))
        .add("init_std", &ModelConfig::init_std,
             "init gpt2: std of the normal init; residual projections get / sqrt(2L)",
             greater_than(0))
        .add("init_from", &ModelConfig::init_from,
             "warm start: weights of a meshlm run / checkpoint directory, a .safetensors file or "
             "a Hugging Face directory (fresh optimizer and schedule); empty = random init")
        .add("mup.enabled", &ModelConfig::mup_enabled,
             "muP: maximal-update init and 1/d_head attention (needs tied_head false)")
        .add("mup.d_base", &ModelConfig::mup_d_base,
             "muP base width of optim.mup_rule=mup (lr * d_base / d_model)", at_least(1))
        .add("mup.u_init", &ModelConfig::mup_u_init,
             "muP readout init: mup N(0, 1/D^2), sp N(0, 1/D), zero", one_of({"mup", "sp", "zero"}))
        .add("mup.q_init", &ModelConfig::mup_q_init, "muP query init", one_of({"normal", "zero"}))
        .add("mup.r_init", &ModelConfig::mup_r_init, "muP init of the residual output projections",
             one_of({"normal", "zero"}))
        .add("qk_scale", &ModelConfig::qk_scale,
             "attention score scale; 0 = 1/d_head under muP, else 1/sqrt(d_head)", at_least(0))
        .add("qk_norm", &ModelConfig::qk_norm,
             "RMSNorm (no gains) over each query and key head before the scores")
        .add("attn_act", &ModelConfig::attn_act,
             "attention nonlinearity: softmax, or seed 002's sqrelu / elu (divided by "
             "max_seq_len) and norm_sqrelu / norm_elu (divided by the row sum + norm_eps)",
             one_of({"softmax", "sqrelu", "elu", "norm_sqrelu", "norm_elu"}))
        .add("attention", &ModelConfig::attention,
             "full: multi-head softmax attention; vq: Transformer-VQ's single-head gated "
             "attention over quantized keys in linear time (model.vq.*)",
             one_of({"full", "vq"}));
}

// Transformer-VQ's attention (model.attention vq)
void add_vq_keys(ModelSection& s) {
    s.add("vq.block_len", &ModelConfig::vq_block_len,
          "VQ: tokens per block; a block attends to itself, the previous block and the "
          "compressed cache of all older ones",
          at_least(1))
        .add("vq.n_code", &ModelConfig::vq_codes, "VQ: codebook size (S)", at_least(1))
        .add("vq.d_k", &ModelConfig::vq_d_k, "VQ: query / key width", at_least(1))
        .add("vq.d_v", &ModelConfig::vq_d_v, "VQ: value and gate width; 0 = 2 * d_model",
             at_least(0))
        .add("vq.c_beta", &ModelConfig::vq_c_beta, "VQ: commitment loss coefficient", at_least(0))
        .add("vq.c_gamma", &ModelConfig::vq_c_gamma,
             "VQ: codebook EMA decay per optimizer step (over the step's global batch)",
             in_closed_open(0, 1))
        .add("vq.update_len", &ModelConfig::vq_update_len,
             "VQ: truncated backpropagation: rows of train.seq_len train in chunks of this many "
             "tokens, one optimizer step each, the attention state carried without gradient; 0 = "
             "train.seq_len",
             at_least(0))
        .add("vq.reduction", &ModelConfig::vq_reduction,
             "VQ: how each block's compressed cache is made: serial (carried block by block, a "
             "running mean) or matmul (every block's at once from the blocks' own counts and "
             "means, one GEMM per code; the same values up to rounding)",
             one_of({"serial", "matmul"}))
        .add("vq.pe_lam", &ModelConfig::vq_pe_lam,
             "VQ: longest wavelength of the relative-position sinusoids", greater_than(1));
}

}  // namespace

void add_model_options(OptionTable& t) {
    ModelSection s(t, "model", &Config::model);
    add_shape_keys(s);
    add_position_keys(s);
    add_layer_keys(s);
    add_init_keys(s);
    add_vq_keys(s);
    s.add("init_from_layers", &ModelConfig::init_from_layers,
          "depth up-scaling: init_from's block for each layer, e.g. \"0,0,1,1\"; empty = "
          "the same blocks");
}

}  // namespace meshlm::config_detail
