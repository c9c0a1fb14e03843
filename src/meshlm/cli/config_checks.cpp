// The rules between keys of the run configuration, run on the resolved config after every
// key passed its own constraint (config_table.h).
#include "meshlm/cli/config_table.h"

#include <algorithm>

#include "meshlm/model/model_config.h"

namespace meshlm::config_detail {
namespace {

// Divisors of n near `wanted` (all of them when there are few), for the n_head message.
std::string divisors_near(int n, int wanted) {
    // Pairs (d, n / d) up to sqrt(n): a d_model of 2^31 - 1 must not cost seconds (the fuzzer's
    // slow input, fuzz/regressions/config_yaml/).
    std::vector<int> divs, high;
    for (long d = 1; d * d <= n; ++d)
        if (n % d == 0) {
            divs.push_back(static_cast<int>(d));
            if (d * d != n) high.push_back(static_cast<int>(n / d));
        }
    divs.insert(divs.end(), high.rbegin(), high.rend());
    constexpr std::size_t max_shown = 16;
    std::size_t lo = 0, hi = divs.size();
    if (divs.size() > max_shown) {
        const auto pos = static_cast<std::size_t>(
            std::lower_bound(divs.begin(), divs.end(), wanted) - divs.begin());
        lo = pos > max_shown / 2 ? pos - max_shown / 2 : 0;
        lo = std::min(lo, divs.size() - max_shown);
        hi = lo + max_shown;
    }
    std::string out = lo > 0 ? "..., " : "";
    for (std::size_t i = lo; i < hi; ++i) out += (i > lo ? ", " : "") + std::to_string(divs[i]);
    return out + (hi < divs.size() ? ", ..." : "");
}

std::optional<std::string> tensor_parallel_divides(const Config& c) {
    // Tensor parallelism splits heads, key/value heads and the MLP width evenly; say so
    // before any rank builds a model.
    try {
        check_model_parallel(c.model, c.parallel.model);
    } catch (const InvalidInput& e) {
        return "parallel.model=" + std::to_string(c.parallel.model) + ": " + e.what();
    }
    return std::nullopt;
}

std::optional<std::string> heads_divide_width(const Config& c) {
    const auto& m = c.model;
    if (m.n_head < 1 || m.d_model < 1 || m.d_model % m.n_head == 0) return std::nullopt;
    return "model.n_head (" + std::to_string(m.n_head) + ") must divide model.d_model (" +
           std::to_string(m.d_model) +
           "); valid head counts: " + divisors_near(m.d_model, m.n_head);
}

std::optional<std::string> model_makes_sense(const Config& c) {
    try {
        check_model_config(c.model);
    } catch (const InvalidInput& e) {
        return std::string(e.what());
    }
    return std::nullopt;
}

std::optional<std::string> vq_update_len_fits(const Config& c) {
    // Truncated backpropagation: whole chunks, and steps / checkpoints at batch ends
    // (the carried state is not in a checkpoint).
    const int U = c.model.vq_update_len, T = c.train.seq_len;
    if (U == 0) return std::nullopt;
    if (!c.model.vq()) return "model.vq.update_len needs model.attention vq";
    if (T % U != 0)
        return "model.vq.update_len (" + std::to_string(U) + ") must divide train.seq_len (" +
               std::to_string(T) + ")";
    const long n = T / U;
    if (n > 1 && c.train.seq_warmup_steps > 0)
        return "model.vq.update_len below train.seq_len needs train.seq_warmup_steps 0";
    if (n > 1 && (c.train.steps % n != 0 || c.checkpoint.interval % n != 0))
        return "model.vq.update_len splits each row into " + std::to_string(n) +
               " optimizer steps: train.steps (" + std::to_string(c.train.steps) +
               ") and checkpoint.interval (" + std::to_string(c.checkpoint.interval) +
               ") must be multiples of " + std::to_string(n);
    return std::nullopt;
}

std::optional<std::string> seq_len_fits_context(const Config& c) {
    if (c.train.seq_len <= c.model.max_seq_len) return std::nullopt;
    return "train.seq_len (" + std::to_string(c.train.seq_len) +
           ") must be <= model.max_seq_len (" + std::to_string(c.model.max_seq_len) + ")";
}

std::optional<std::string> byte_vocab_fits(const Config& c) {
    if (c.data.tokenizer != "byte" || c.model.vocab_size >= 257) return std::nullopt;
    return "model.vocab_size (" + std::to_string(c.model.vocab_size) +
           ") must be >= 257 when data.tokenizer is 'byte' (256 byte values + "
           "end-of-document)";
}

std::optional<std::string> seq_warmup_len_divides(const Config& c) {
    const auto& t = c.train;
    if (t.seq_warmup_steps == 0) return std::nullopt;
    if (t.seq_warmup_len >= 1 && t.seq_warmup_len <= t.seq_len && t.seq_len % t.seq_warmup_len == 0)
        return std::nullopt;
    return "train.seq_warmup_len (" + std::to_string(t.seq_warmup_len) +
           ") must divide train.seq_len (" + std::to_string(t.seq_len) +
           ") when train.seq_warmup_steps > 0; valid lengths: " +
           divisors_near(t.seq_len, t.seq_warmup_len);
}

std::optional<std::string> layer_map_has_source(const Config& c) {
    if (c.model.init_from_layers.empty() || !c.model.init_from.empty()) return std::nullopt;
    return std::string(
        "model.init_from_layers maps the blocks of model.init_from: set "
        "model.init_from too");
}

std::optional<std::string> decay_after_warmup(const Config& c) {
    const auto& o = c.optim;
    if (o.decay_steps == 0 || o.decay_steps > o.warmup_steps) return std::nullopt;
    return "optim.decay_steps (" + std::to_string(o.decay_steps) +
           ") must be 0 (= train.steps) or past optim.warmup_steps (" +
           std::to_string(o.warmup_steps) + "): the decay starts after the warmup";
}

std::optional<std::string> held_out_below_one(const Config& c) {
    if (c.data.val_fraction + c.data.test_fraction < 1) return std::nullopt;
    return std::string("data.val_fraction + data.test_fraction must be < 1");
}

std::optional<std::string> tokenizer_set(const Config& c) {
    if (!c.data.tokenizer.empty()) return std::nullopt;
    return std::string("data.tokenizer must be set (byte, or a tokenizer file)");
}

std::optional<std::string> data_set(const Config& c) {
    if (c.data.synthetic || !c.data.path.empty()) return std::nullopt;
    return std::string("data.path must be set unless data.synthetic is true");
}

std::optional<std::string> rollback_has_checkpoints(const Config& c) {
    if (c.train.nan_policy != "rollback" || c.checkpoint.interval > 0) return std::nullopt;
    return std::string(
        "train.nan_policy=rollback reloads the last periodic checkpoint: set "
        "checkpoint.interval > 0 (or train.nan_policy to halt or skip)");
}

}  // namespace

std::vector<CrossCheck> config_cross_checks() {
    return {tensor_parallel_divides, heads_divide_width,   model_makes_sense,
            vq_update_len_fits,      seq_len_fits_context, byte_vocab_fits,
            seq_warmup_len_divides,  layer_map_has_source, decay_after_warmup,
            held_out_below_one,      tokenizer_set,        data_set,
            rollback_has_checkpoints};
}

}  // namespace meshlm::config_detail
