#include "meshlm/model/transformer_layout.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "meshlm/core/error.h"
#include "meshlm/core/rng.h"

namespace meshlm {
namespace {

// Builds slices in order, with their facts, for one model rank.
class Builder {
  public:
    Builder(const ModelConfig& cfg, int model) : cfg_(cfg), M_(model) {}

    void add(const std::string& name, Shape full, int layer, int unit, TpSplit split, InitRule init,
             float std = 0.f, std::vector<std::int64_t> sections = {}, const char* role = nullptr) {
        ParamSlice s;
        s.mup_role = role ? role : full.ndim == 2 ? "hidden" : "vector";
        s.name = name;
        s.full_shape = full;
        s.layer = layer;
        s.unit = unit;
        s.split = split;  // a fact of the tensor, whatever the rank count
        s.sections = std::move(sections);
        s.shape = tp_local_shape(s, M_);
        s.decay = full.ndim == 2;
        // GPT-J draws every random tensor from a truncated normal (haiku's initializers).
        if (init == InitRule::normal && cfg_.init == "gptj" && !cfg_.mup_enabled)
            init = InitRule::truncated_normal;
        s.init = init;
        s.init_std = std;
        s.index = static_cast<int>(layout.slices().size());
        layout.add(std::move(s));
    }
    // A weight matrix [out, in]: N(0, std) by the init rule (muP: 1/sqrt(fan_in)). residual:
    // an output projection into the residual stream (gpt2: / sqrt(2L); gptj: (2/L) / sqrt(C),
    // seed 003's init_scale over the model width whatever the fan-in).
    float matrix_std(std::int64_t fan_in, bool residual) const {
        if (cfg_.init == "gptj" && residual && !cfg_.mup_enabled)
            return 2.f / static_cast<float>(cfg_.n_layer) /
                   std::sqrt(static_cast<float>(cfg_.d_model));
        if (cfg_.init != "gpt2" || cfg_.mup_enabled)
            return 1.f / std::sqrt(static_cast<float>(fan_in));
        return residual ? cfg_.init_std / std::sqrt(2.f * cfg_.n_layer) : cfg_.init_std;
    }
    // The token and position embeddings: muP and Transformer-VQ (e_init) draw N(0, 1), GPT-J
    // its position table TruncatedNormal(0.02), the others as a one-hot linear of fan-in rows.
    float embedding_std(std::int64_t rows, bool position) const {
        if (cfg_.mup_enabled || cfg_.init == "vq") return 1.f;
        if (cfg_.init == "gptj" && position) return 0.02f;
        return matrix_std(rows, false);
    }
    void norm(const std::string& name, int layer, int unit) {
        const std::int64_t C = cfg_.d_model;
        add(name + ".weight", {C}, layer, unit, TpSplit::replicated, InitRule::ones);
        if (cfg_.norm_bias)
            add(name + ".bias", {C}, layer, unit, TpSplit::replicated, InitRule::zeros);
    }

    ParamLayout layout;

  private:
    const ModelConfig& cfg_;
    int M_;
};

// Transformer-VQ's attention sublayer (model/vq_attention.h). Tensor parallelism splits only
// the value / gate path (the seed's TP branch): v | g by rows, the output projection by columns;
// queries, keys, positions and the codebook are replicated.
void vq_block(Builder& b, const ModelConfig& cfg, const std::string& h, int l, int u,
              InitRule resid_init, bool r_zero) {
    const std::int64_t C = cfg.d_model, dk = cfg.vq_d_k, dv = cfg.vq_value_width(),
                       S = cfg.vq_codes;
    const auto rep = TpSplit::replicated;
    const auto normal = InitRule::normal;
    b.add(h + "vq.qk.weight", {2 * dk, C}, l, u, rep, normal, b.matrix_std(C, false));
    b.add(h + "vq.vg.weight", {2 * dv, C}, l, u, TpSplit::rows, normal, b.matrix_std(C, false),
          {dv, dv});
    b.add(h + "vq.r.weight", {dk, C}, l, u, rep, normal, b.matrix_std(C, false));
    b.add(h + "vq.u", {dk}, l, u, rep, InitRule::zeros);
    b.add(h + "vq.v", {dk}, l, u, rep, InitRule::zeros);
    // The codebook's statistics start as the seed's: sums N(0, 1/sqrt(S)), counts 1.
    b.add(h + "vq.c_sum", {S, dk}, l, u, rep, normal, 1.f / std::sqrt(static_cast<float>(S)));
    b.add(h + "vq.c_count", {S}, l, u, rep, InitRule::ones);
    for (int i = 1; i <= 2; ++i) {
        ParamSlice& s = const_cast<ParamSlice&>(b.layout.slices()[b.layout.slices().size() - i]);
        s.decay = false;
        s.ema_decay = cfg.vq_c_gamma;
        if (s.init == InitRule::truncated_normal) s.init = normal;  // statistics, not weights
    }
    b.add(h + "vq.out.weight", {C, dv}, l, u, TpSplit::columns, resid_init,
          r_zero ? 0.f : b.matrix_std(dv, true));
}

// Draw j of a truncated normal: the first of the normals at counters j * kTries + t (t = 0, 1,
// ...) inside +-2, so any element draws on its own. A normal falls outside with probability
// 0.0455; all kTries of them with 0.0455^16 < 1e-21, where 0 stands in.
float truncated_draw(Philox& rng, std::uint64_t j) {
    constexpr std::uint64_t kTries = 16;
    for (std::uint64_t t = 0; t < kTries; ++t) {
        rng.set_counter(j * kTries + t);
        const float x = rng.normal();
        if (std::abs(x) <= 2.f) return x;
    }
    return 0.f;
}

}  // namespace

ParamLayout transformer_layout(const ModelConfig& cfg, int model) {
    check_model_config(cfg);
    MESHLM_CHECK(model >= 1, "parallel.model must be at least 1");
    const std::int64_t C = cfg.d_model, V = cfg.vocab_size, H = cfg.n_head, K = cfg.kv_heads(),
                       D = cfg.head_dim(), F = cfg.mlp_width(), L = cfg.n_layer;
    check_model_parallel(cfg, model);
    Builder b(cfg, model);
    const auto rows = TpSplit::rows, cols = TpSplit::columns, rep = TpSplit::replicated;
    const auto normal = InitRule::normal, zeros = InitRule::zeros;
    // Embeddings count as one-hot linears: fan-in = rows. muP draws them N(0, 1).
    const bool mup = cfg.mup_enabled;
    b.add("wte.weight", {V, C}, -1, 0, rows, normal, b.embedding_std(V, false), {}, "embedding");
    if (cfg.position == "learned")
        b.add("wpe.weight", {cfg.max_seq_len, C}, -1, 0, rep, normal,
              b.embedding_std(cfg.max_seq_len, true), {}, "embedding");
    if (cfg.position == "scaled_sin") b.add("wpe.scale", {1}, -1, 0, rep, zeros);
    // T5's bias table, one row per head (split with the heads), read by every block: in the
    // embeddings' unit, which a pass holds from its start to its end. TruncatedNormal(0.02) as
    // the seed under every init rule.
    if (cfg.position == "t5_bias")
        b.add("t5.rel_bias", {H, cfg.t5_buckets}, -1, 0, rows, InitRule::truncated_normal, 0.02f,
              {}, "vector");
    // muP's optional zero inits: the residual output projections, the query rows.
    const bool r_zero = mup && cfg.mup_r_init == "zero";
    const auto resid_init = r_zero ? zeros : normal;
    const std::int64_t fc_rows = cfg.gated_mlp() ? 2 * F : F;
    const std::vector<std::int64_t> qkv_sections{H * D, K * D, K * D};
    const std::vector<std::int64_t> fc_sections =
        cfg.gated_mlp() ? std::vector<std::int64_t>{F, F} : std::vector<std::int64_t>{F};
    for (int l = 0; l < L; ++l) {
        const std::string h = "h." + std::to_string(l) + ".";
        const int u = l + 1;
        b.norm(h + "ln_1", l, u);
        if (cfg.vq()) {
            vq_block(b, cfg, h, l, u, resid_init, r_zero);
        } else {
            b.add(h + "attn.c_attn.weight", {(H + 2 * K) * D, C}, l, u, rows, normal,
                  b.matrix_std(C, false), qkv_sections);
            if (mup && cfg.mup_q_init == "zero")
                const_cast<ParamSlice&>(b.layout.slices().back()).init_zero_rows = H * D;
            if (cfg.qkv_bias) {
                b.add(h + "attn.c_attn.bias", {(H + 2 * K) * D}, l, u, rows, zeros, 0,
                      qkv_sections);
                // The key bias shifts every score of a query by the same q.b: softmax ignores it,
                // so its gradient is exactly zero -- unless rotary positions rotate it per
                // position.
                if (cfg.position != "rope") {
                    ParamSlice& s = const_cast<ParamSlice&>(b.layout.slices().back());
                    const std::size_t q = s.shape.dims[0] * H / (H + 2 * K),
                                      k = s.shape.dims[0] * K / (H + 2 * K);
                    s.null_grad_begin = q;
                    s.null_grad_end = q + k;
                }
            }
            b.add(h + "attn.c_proj.weight", {C, H * D}, l, u, cols, resid_init,
                  r_zero ? 0.f : b.matrix_std(H * D, true));
            if (cfg.proj_bias) b.add(h + "attn.c_proj.bias", {C}, l, u, rep, zeros);
        }
        if (!cfg.has_mlp()) continue;
        if (cfg.block == "sequential") b.norm(h + "ln_2", l, u);
        b.add(h + "mlp.c_fc.weight", {fc_rows, C}, l, u, rows, normal, b.matrix_std(C, false),
              fc_sections);
        if (cfg.mlp_bias) b.add(h + "mlp.c_fc.bias", {fc_rows}, l, u, rows, zeros, 0, fc_sections);
        b.add(h + "mlp.c_proj.weight", {C, F}, l, u, cols, resid_init,
              r_zero ? 0.f : b.matrix_std(F, true));
        if (cfg.mlp_bias) b.add(h + "mlp.c_proj.bias", {C}, l, u, rep, zeros);
    }
    const int last = cfg.n_layer + 1;
    b.norm("ln_f", -1, last);
    if (!cfg.tied_head) {
        // muP's readout: N(0, 1/D^2) (u_init mup), N(0, 1/D) (sp) or zero.
        const std::string u = mup ? cfg.mup_u_init : "";
        const float u_std = u == "mup" ? 1.f / static_cast<float>(C) : b.matrix_std(C, false);
        b.add("lm_head.weight", {V, C}, -1, last, rows, u == "zero" ? zeros : normal,
              u == "zero" ? 0.f : u_std, {}, "readout");
    }
    if (cfg.head_bias) b.add("lm_head.bias", {V}, -1, last, rows, zeros);
    return std::move(b.layout);
}

void init_params(const ModelConfig& cfg, const ParamLayout& layout, int model, int rank,
                 float* params, std::uint64_t seed, std::size_t begin, std::size_t end) {
    for (const ParamSlice& s : layout.slices()) {
        tp_for_each_piece(s, model, rank, [&](std::size_t fo, std::size_t lo, std::size_t n) {
            const std::size_t at = s.offset + lo;  // the piece, locally
            const std::size_t a = std::max(at, begin), b = std::min(at + n, end);
            if (a >= b) return;
            float* p = params + (a - begin);
            const std::size_t count = b - a;
            if (s.init == InitRule::zeros || s.init == InitRule::ones) {
                std::fill_n(p, count, s.init == InitRule::ones ? 1.f : 0.f);
                return;
            }
            const bool truncated = s.init == InitRule::truncated_normal;
            // Element j of the whole tensor is draw j of its stream, so any piece, and any
            // chunk of one, draws on its own: threads split the draws, bitwise as one thread.
            const std::uint64_t first_draw = fo + (a - at);
            constexpr std::size_t kChunk = 1 << 16;
            const auto chunks = static_cast<std::int64_t>((count + kChunk - 1) / kChunk);
#pragma omp parallel for schedule(dynamic, 1) if (chunks > 1)
            for (std::int64_t c = 0; c < chunks; ++c) {
                const std::size_t k0 = static_cast<std::size_t>(c) * kChunk;
                const std::size_t k1 = std::min(count, k0 + kChunk);
                Philox rng(seed, 0x1000 + static_cast<std::uint64_t>(s.index));
                rng.set_counter(first_draw + k0);
                for (std::size_t k = k0; k < k1; ++k)
                    p[k] = s.init_std *
                           (truncated ? truncated_draw(rng, first_draw + k) : rng.normal());
            }
            if (s.init_zero_rows > 0) {  // whole-tensor element index / columns = its row
                const std::size_t cols = static_cast<std::size_t>(s.full_shape.dims[1]);
                const std::size_t first = fo + (a - at);
                for (std::size_t k = 0; k < count; ++k)
                    if ((first + k) / cols < static_cast<std::size_t>(s.init_zero_rows)) p[k] = 0.f;
            }
        });
    }
}

}  // namespace meshlm
