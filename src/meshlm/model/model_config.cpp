#include "meshlm/model/model_config.h"

#include <cmath>
#include <initializer_list>

#include "meshlm/core/error.h"
#include "meshlm/core/tp_divisibility.h"
#include "meshlm/model/transformer_layout.h"

namespace meshlm {
namespace {

void one_of(const std::string& key, const std::string& v, std::initializer_list<const char*> ok) {
    std::string list;
    for (const char* o : ok) {
        if (v == o) return;
        list += list.empty() ? o : std::string(", ") + o;
    }
    MESHLM_INVALID("model.", key, " must be one of ", list, " (got '", v, "')");
}

// Transformer-VQ's layer fixes what the full attention's options choose.
void check_vq(const ModelConfig& c) {
    auto need = [](const char* key, const std::string& got, const char* ok) {
        MESHLM_INVALID("model.attention vq needs model.", key, " ", ok, " (got ", got,
                       "): the VQ layer has its own positions, normalization and heads");
    };
    if (c.block != "sequential") need("block", c.block, "sequential");
    if (c.position != "none" && c.position != "learned" && c.position != "scaled_sin")
        need("position", c.position,
             "none, scaled_sin or learned (its relative biases are built in)");
    if (c.attn_act != "softmax") need("attn_act", c.attn_act, "softmax");
    if (c.qk_norm) need("qk_norm", "true", "false (queries and keys are always RMS-normalized)");
    if (c.dropout_attn > 0.f) need("dropout_attn", std::to_string(c.dropout_attn), "0");
    if (c.mup_enabled) need("mup.enabled", "true", "false");
    if (c.d_model % 2 != 0)
        MESHLM_INVALID(
            "model.attention vq needs an even model.d_model (the sinusoids' sin | cos "
            "halves), got ",
            c.d_model);
    if (c.vq_block_len < 1 || c.vq_codes < 1 || c.vq_d_k < 1 || c.vq_d_v < 0)
        MESHLM_INVALID("model.vq.block_len, n_code and d_k must be >= 1 and d_v >= 0 (got ",
                       c.vq_block_len, ", ", c.vq_codes, ", ", c.vq_d_k, ", ", c.vq_d_v, ")");
    if (!(c.vq_c_gamma >= 0.f && c.vq_c_gamma < 1.f))
        MESHLM_INVALID("model.vq.c_gamma must be in [0, 1) (got ", c.vq_c_gamma, ")");
    if (c.vq_reduction != "serial" && c.vq_reduction != "matmul")
        MESHLM_INVALID("model.vq.reduction must be serial or matmul (got \"", c.vq_reduction,
                       "\")");
    if (!(c.vq_c_beta >= 0.f) || !(c.vq_pe_lam > 1.f))
        MESHLM_INVALID("model.vq.c_beta must be >= 0 and model.vq.pe_lam > 1 (got ", c.vq_c_beta,
                       ", ", c.vq_pe_lam, ")");
}

void check_t5(const ModelConfig& c) {
    if (c.t5_buckets < 2)
        MESHLM_INVALID("model.t5.num_buckets must be at least 2 (got ", c.t5_buckets, ")");
    if (c.t5_max_distance <= c.t5_buckets / 2)
        MESHLM_INVALID("model.t5.max_distance (", c.t5_max_distance,
                       ") must exceed model.t5.num_buckets / 2 = ", c.t5_buckets / 2,
                       ": the distances below that have a bucket each");
    if (c.attn_act != "softmax")
        MESHLM_INVALID("model.position t5_bias needs model.attn_act softmax (got ", c.attn_act,
                       ")");
}

}  // namespace

void check_model_parallel(const ModelConfig& cfg, int model) {
    check_model_parallel_shapes(model, cfg.n_head, cfg.kv_heads(), cfg.mlp_width(),
                                cfg.vq() ? cfg.vq_value_width() : 0);
}

void check_model_config(const ModelConfig& c) {
    one_of("block", c.block, {"sequential", "parallel"});
    one_of("norm", c.norm, {"layernorm", "rmsnorm"});
    one_of("position", c.position, {"learned", "rope", "alibi", "t5_bias", "none", "scaled_sin"});
    if (c.position == "t5_bias") check_t5(c);
    if (c.position == "scaled_sin" && !c.vq())
        MESHLM_INVALID(
            "model.position scaled_sin is Transformer-VQ's absolute position option and needs "
            "model.attention vq; full attention has learned, rope, alibi, t5_bias or none");
    one_of("rope_style", c.rope_style, {"interleaved", "half"});
    one_of("rope_scaling", c.rope_scaling, {"none", "linear", "llama3"});
    one_of("mlp", c.mlp, {"gelu_tanh", "gelu", "relu", "sqrelu", "swiglu", "geglu", "none"});
    one_of("attention", c.attention, {"full", "vq"});
    one_of("init", c.init, {"gpt2", "fan_in", "gptj", "vq"});
    one_of("attn_act", c.attn_act, {"softmax", "sqrelu", "elu", "norm_sqrelu", "norm_elu"});
    if (c.attn_act != "softmax" && c.dropout_attn > 0.f)
        MESHLM_INVALID("model.dropout_attn (", c.dropout_attn, ") needs model.attn_act softmax (",
                       c.attn_act, " has no dropout of its probabilities); set one of them");
    if (c.n_head < 1 || c.d_model % c.n_head != 0)
        MESHLM_INVALID("model.n_head (", c.n_head, ") must divide model.d_model (", c.d_model, ")");
    if (c.n_kv_head < 0 || c.n_head % c.kv_heads() != 0)
        MESHLM_INVALID("model.n_kv_head (", c.n_kv_head, ") must divide model.n_head (", c.n_head,
                       "); 0 means n_head");
    if (c.position == "rope") {
        const int rd = c.rotary_dims();
        if (rd % 2 != 0 || rd > c.head_dim())
            MESHLM_INVALID("model.rope_dim (", c.rope_dim,
                           ") must be even and at most the head width d_model / n_head = ",
                           c.head_dim(), " (0 = all of it)");
    }
    one_of("mup.u_init", c.mup_u_init, {"mup", "sp", "zero"});
    one_of("mup.q_init", c.mup_q_init, {"normal", "zero"});
    one_of("mup.r_init", c.mup_r_init, {"normal", "zero"});
    if (c.mup_d_base < 1) MESHLM_INVALID("model.mup.d_base must be >= 1 (got ", c.mup_d_base, ")");
    if (!(c.logit_scale >= 0.f) || !std::isfinite(c.logit_scale))
        MESHLM_INVALID("model.logit_scale must be a finite number >= 0 (got ", c.logit_scale,
                       "); 0 = 1/sqrt(d_model), 1 = no scaling");
    if (!(c.qk_scale >= 0.f))
        MESHLM_INVALID("model.qk_scale must be >= 0 (got ", c.qk_scale, "); 0 = the default");
    if (c.mup_enabled && c.tied_head)
        MESHLM_INVALID(
            "model.mup.enabled needs an untied readout: set model.tied_head=false (muP "
            "initializes and scales the embedding and the readout differently)");
    if (c.vq()) check_vq(c);
    if (!c.has_mlp() && c.block == "parallel")
        MESHLM_INVALID(
            "model.mlp none needs model.block sequential (a parallel block is "
            "attention + MLP on one norm)");
    for (float p : {c.dropout_embd, c.dropout_attn, c.dropout_resid})
        if (!(p >= 0.f && p < 1.f))
            MESHLM_INVALID("model.dropout_* rates must be in [0, 1) (got ", p, ")");
}

float ModelConfig::attention_scale() const {
    if (qk_scale > 0.f) return qk_scale;
    const float d = static_cast<float>(head_dim());
    return mup_enabled ? 1.f / d : 1.f / std::sqrt(d);
}

float ModelConfig::head_scale() const {
    return logit_scale > 0.f ? logit_scale : 1.f / std::sqrt(static_cast<float>(d_model));
}

bool ModelConfig::same_shapes(const ModelConfig& o) const {
    const ParamLayout a = transformer_layout(*this), b = transformer_layout(o);
    if (a.slices().size() != b.slices().size()) return false;
    for (std::size_t i = 0; i < a.slices().size(); ++i)
        if (a.slices()[i].name != b.slices()[i].name ||
            !(a.slices()[i].shape == b.slices()[i].shape))
            return false;
    return true;
}

ModelConfig for_inference(ModelConfig cfg) {
    cfg.dropout_embd = cfg.dropout_attn = cfg.dropout_resid = 0.f;
    return cfg;
}

}  // namespace meshlm
