// Config loading, validation and dumping, all driven by one option table (build_table below).
//
// Flow of load_config: defaults (the structs' initializers) < YAML file < overrides. Each value
// is handed to its option as a RawValue (scalar text or "was a sequence/map/null"), parsed with
// strict scalar rules (integers reject "3.5", floats reject "abc", bools are true/false), and the
// key's origin is remembered so that range errors found after resolution can point at the file
// line or the override that set the value. All problems are collected and thrown together.
#include "meshlm/cli/config.h"
#include "meshlm/cli/suggest.h"
#include "meshlm/cli/yaml_documents.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <string_view>
#include <type_traits>

#include "meshlm/core/byte_size.h"
#include "meshlm/core/error.h"
#include "meshlm/parallel/mesh.h"

namespace meshlm {
namespace {

// ---------------------------------------------------------------------------------------------
// Scalars: strict parsing and exact formatting for each field type.

// A value as it arrives from YAML: a scalar's text, or which other kind of node it was.
struct RawValue {
    enum class Kind { null, scalar, sequence, map };
    Kind kind = Kind::scalar;
    std::string text;  // scalar text; empty for the other kinds
};

template <typename T>
constexpr bool is_number_v = std::is_arithmetic_v<T> && !std::is_same_v<T, bool>;

template <typename T>
const char* type_name() {
    if constexpr (std::is_same_v<T, bool>)
        return "bool";
    else if constexpr (std::is_same_v<T, std::string>)
        return "string";
    else if constexpr (std::is_same_v<T, float>)
        return "float";
    else if constexpr (std::is_same_v<T, double>)
        return "double";
    else if constexpr (std::is_unsigned_v<T>)
        return "uint64";
    else
        return "int";
}

template <typename T>
const char* expected_what() {
    if constexpr (std::is_same_v<T, bool>)
        return "a boolean (true or false)";
    else if constexpr (std::is_same_v<T, std::string>)
        return "a string";
    else if constexpr (std::is_floating_point_v<T>)
        return "a number";
    else if constexpr (std::is_unsigned_v<T>)
        return "a non-negative integer";
    else
        return "an integer";
}

// A double-quoted YAML string (escapes quotes, backslashes, control characters).
std::string quote_yaml(const std::string& s) {
    YAML::Emitter e;
    e << YAML::DoubleQuoted << s;
    return e.c_str();
}

// YAML text for a value; floats use the shortest text that reads back to the same bits.
template <typename T>
std::string format_value(const T& v) {
    if constexpr (std::is_same_v<T, bool>) {
        return v ? "true" : "false";
    } else if constexpr (std::is_same_v<T, std::string>) {
        return quote_yaml(v);
    } else {
        char buf[64];
        const auto r = std::to_chars(buf, buf + sizeof(buf), v);
        return std::string(buf, r.ptr);
    }
}

// The value as quoted in an error message.
template <typename T>
std::string show_value(const T& v) {
    if constexpr (std::is_same_v<T, std::string>)
        return "'" + v + "'";
    else
        return format_value(v);
}

// Parses a scalar into `out`; returns what went wrong ("expected an integer, got '3.5'").
template <typename T>
std::optional<std::string> parse_scalar(const std::string& text, T& out) {
    const std::string wrong =
        std::string("expected ") + expected_what<T>() + ", got '" + text + "'";
    if constexpr (std::is_same_v<T, std::string>) {
        out = text;
        return std::nullopt;
    } else if constexpr (std::is_same_v<T, bool>) {
        if (text == "true" || text == "True" || text == "TRUE") return out = true, std::nullopt;
        if (text == "false" || text == "False" || text == "FALSE") return out = false, std::nullopt;
        return wrong;
    } else {
        // Decimal only, optional sign; "+" is skipped since from_chars does not take it.
        std::string_view s = text;
        const bool plus = s.starts_with('+');
        if (plus) s.remove_prefix(1);
        const bool minus = s.starts_with('-');
        if (s.empty() || s.starts_with('+') || (minus && (plus || std::is_unsigned_v<T>)))
            return wrong;
        T value{};
        std::from_chars_result r;
        if constexpr (std::is_floating_point_v<T>)
            r = std::from_chars(s.data(), s.data() + s.size(), value, std::chars_format::general);
        else
            r = std::from_chars(s.data(), s.data() + s.size(), value, 10);
        if (r.ec == std::errc::result_out_of_range && r.ptr == s.data() + s.size())
            return std::string("'") + text + "' is out of range for " + type_name<T>();
        if (r.ec != std::errc() || r.ptr != s.data() + s.size()) return wrong;
        if constexpr (std::is_floating_point_v<T>) {
            if (!std::isfinite(value))
                return std::string("expected a finite number, got '") + text + "'";
        }
        out = value;
        return std::nullopt;
    }
}

template <typename T>
std::optional<std::string> read_value(const RawValue& raw, T& out) {
    switch (raw.kind) {
        case RawValue::Kind::scalar:
            return parse_scalar(raw.text, out);
        case RawValue::Kind::null:
            if constexpr (std::is_same_v<T, std::string>) return out.clear(), std::nullopt;
            return std::string("expected ") + expected_what<T>() + ", got an empty value";
        case RawValue::Kind::sequence:
            return std::string("expected ") + expected_what<T>() + ", got a sequence";
        case RawValue::Kind::map:
            return std::string("expected ") + expected_what<T>() + ", got a mapping";
    }
    return std::nullopt;
}

// ---------------------------------------------------------------------------------------------
// Constraints. A Rule is the "must be ..." half of a message plus the test; numeric rules test the
// value as a double (exact for every field type we have), string rules the text.

struct Rule {
    std::string describe;                          // "> 0", "in [0, 1)", "one of a, b"
    std::function<bool(double)> number;            // for int / uint64 / float / double fields
    std::function<bool(const std::string&)> text;  // for string fields
};

std::string num(double v) {
    return format_value(v);
}

Rule at_least(double lo) {
    return {">= " + num(lo), [lo](double v) { return v >= lo; }, {}};
}
Rule greater_than(double lo) {
    return {"> " + num(lo), [lo](double v) { return v > lo; }, {}};
}
// [lo, hi)
Rule in_closed_open(double lo, double hi) {
    return {"in [" + num(lo) + ", " + num(hi) + ")",
            [lo, hi](double v) { return v >= lo && v < hi; },
            {}};
}
// (lo, hi)
Rule in_open(double lo, double hi) {
    return {"in (" + num(lo) + ", " + num(hi) + ")",
            [lo, hi](double v) { return v > lo && v < hi; },
            {}};
}
// A byte size such as 2GB or 512MiB (core/byte_size.h).
Rule byte_size() {
    return {"a size like 2GB or 512MiB", {}, [](const std::string& v) {
                try {
                    return parse_byte_size(v, "size") > 0;
                } catch (const InvalidInput&) {
                    return false;
                }
            }};
}
Rule one_of(std::vector<std::string> allowed) {
    std::string describe = "one of ";
    for (std::size_t i = 0; i < allowed.size(); ++i) describe += (i ? ", " : "") + allowed[i];
    return {describe, {}, [allowed = std::move(allowed)](const std::string& v) {
                return std::find(allowed.begin(), allowed.end(), v) != allowed.end();
            }};
}

// ---------------------------------------------------------------------------------------------
// The option table: one type-erased Option per key, built by Section<S>::add from a member
// pointer, so parse / dump / check exist once as templates.

struct Option {
    std::string section;  // "model"
    std::string key;      // "model.n_layer"
    std::string type;     // "int", "float", ... (help text)
    std::string help;
    std::string constraint;  // Rule::describe; empty = any value of the type
    std::string current;     // for an older name: the key it stands for ("model.norm_eps")
    bool is_string = false;
    // Stores `value` into the field; returns "<key>: expected ..." on a type mismatch.
    std::function<std::optional<std::string>(Config&, const RawValue&)> assign;
    std::function<std::string(const Config&)> dump;  // YAML text of the field's value
    // "<key> must be <rule> (got <value>)" when the resolved value breaks the rule.
    std::function<std::optional<std::string>(const Config&)> check;
};

// A rule involving several keys, run on the resolved config.
using CrossCheck = std::function<std::optional<std::string>(const Config&)>;

struct OptionTable {
    std::vector<std::string> sections;  // dump order; reserved sections have no options
    std::vector<Option> options;        // grouped by section, in declaration order
    std::vector<CrossCheck> cross_checks;

    const Option* find(std::string_view key) const {
        for (const auto& o : options)
            if (o.key == key) return &o;
        return nullptr;
    }
    bool has_section(std::string_view name) const {
        return std::find(sections.begin(), sections.end(), name) != sections.end();
    }
};

template <typename S>
class Section {
  public:
    Section(OptionTable& table, std::string name, S Config::*member)
        : table_(table), name_(std::move(name)), member_(member) {
        table_.sections.push_back(name_);
    }

    template <typename T>
    Section& add(const std::string& name, T S::*field, std::string help, Rule rule = {}) {
        static_assert(is_number_v<T> || std::is_same_v<T, bool> || std::is_same_v<T, std::string>,
                      "config fields are int, uint64, float, double, bool or string");
        constexpr bool numeric = is_number_v<T>, textual = std::is_same_v<T, std::string>;
        MESHLM_CHECK((numeric || !rule.number) && (textual || !rule.text), "rule '", rule.describe,
                     "' does not fit the type of ", name_, ".", name);
        Option o;
        o.section = name_;
        o.key = name_ + "." + name;
        o.type = type_name<T>();
        o.help = std::move(help);
        o.constraint = rule.describe;
        o.is_string = std::is_same_v<T, std::string>;
        const auto member = member_;
        o.assign = [member, field, key = o.key](Config& c,
                                                const RawValue& raw) -> std::optional<std::string> {
            T value{};
            if (auto err = read_value(raw, value)) return key + ": " + *err;
            (c.*member).*field = std::move(value);
            return std::nullopt;
        };
        o.dump = [member, field](const Config& c) { return format_value((c.*member).*field); };
        o.check = [member, field, key = o.key,
                   rule = std::move(rule)](const Config& c) -> std::optional<std::string> {
            const T& v = (c.*member).*field;
            bool ok = true;
            if constexpr (is_number_v<T>) {
                if (rule.number) ok = rule.number(static_cast<double>(v));
            } else if constexpr (std::is_same_v<T, std::string>) {
                if (rule.text) ok = rule.text(v);
            }
            if (ok) return std::nullopt;
            return key + " must be " + rule.describe + " (got " + show_value(v) + ")";
        };
        table_.options.push_back(std::move(o));
        return *this;
    }

    // Marks the option added last as an older name of `current` (a key of this section): read,
    // never written, and refused beside `current` with another value in one config.
    Section& older_name_of(const std::string& current) {
        table_.options.back().current = name_ + "." + current;
        return *this;
    }

  private:
    OptionTable& table_;
    std::string name_;
    S Config::*member_;
};

// Divisors of n near `wanted` (all of them when there are few), for the n_head message.
std::string divisors_near(int n, int wanted) {
    std::vector<int> divs;
    for (int d = 1; d <= n; ++d)
        if (n % d == 0) divs.push_back(d);
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

// =============================================================================================
// THE TABLE. To add an option: one `.add(...)` line here (and the field in its struct). To add a
// section: one Section<...> line; a section with no options is reserved (accepted only empty).
// =============================================================================================
OptionTable build_table() {
    OptionTable t;

    Section<ModelConfig>(t, "model", &Config::model)
        .add("n_layer", &ModelConfig::n_layer, "transformer blocks (L)", at_least(1))
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
        .older_name_of("norm_eps")
        .add("position", &ModelConfig::position,
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
             "llama3 scaling: the original context (original_max_position_embeddings)", at_least(1))
        .add("qkv_bias", &ModelConfig::qkv_bias, "biases of the q, k, v projections")
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
             in_closed_open(0, 1))
        .add("init", &ModelConfig::init,
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
             one_of({"full", "vq"}))
        .add("vq.block_len", &ModelConfig::vq_block_len,
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
             "VQ: longest wavelength of the relative-position sinusoids", greater_than(1))
        .add("init_from_layers", &ModelConfig::init_from_layers,
             "depth up-scaling: init_from's block for each layer, e.g. \"0,0,1,1\"; empty = "
             "the same blocks");

    Section<DataConfig>(t, "data", &Config::data)
        .add("path", &DataConfig::path,
             "a prepared directory, or raw inputs (file, directory, glob; text or JSONL, .gz/.zst) "
             "prepared into a cache on first use")
        .add("format", &DataConfig::format, "raw inputs: file format",
             one_of({"auto", "text", "jsonl"}))
        .add("field", &DataConfig::field, "raw JSONL: the field holding a document")
        .add("separator", &DataConfig::separator,
             "raw text: line that separates documents; empty = one document per file")
        .add("skip_bad_lines", &DataConfig::skip_bad_lines,
             "raw JSONL: count and skip malformed records instead of failing")
        .add("tokenizer", &DataConfig::tokenizer,
             "byte, or a tokenizer.json, .tiktoken or SentencePiece .model file")
        .add("val_fraction", &DataConfig::val_fraction, "raw inputs: share of documents held out",
             in_open(0, 1))
        .add("test_fraction", &DataConfig::test_fraction,
             "raw inputs: share of documents held out for testing", in_closed_open(0, 1))
        .add("split_seed", &DataConfig::split_seed, "raw inputs: seeds the document split")
        .add("cache_dir", &DataConfig::cache_dir,
             "where raw inputs are prepared; empty = $XDG_CACHE_HOME/meshlm or ~/.cache/meshlm")
        .add("packing", &DataConfig::packing,
             "concat: windows across documents; pad: one document per row, padding masked",
             one_of({"concat", "pad"}))
        .add("synthetic", &DataConfig::synthetic,
             "uniformly random tokens instead of text (benchmarks)");

    Section<TrainConfig>(t, "train", &Config::train)
        .add("steps", &TrainConfig::steps, "optimizer steps", at_least(1))
        .add("batch_size", &TrainConfig::batch_size, "sequences per micro-batch (B)", at_least(1))
        .add("seq_len", &TrainConfig::seq_len, "tokens per sequence (T); <= model.max_seq_len",
             at_least(1))
        .add("grad_accum", &TrainConfig::grad_accum, "micro-batches per optimizer step",
             at_least(1))
        .add("seed", &TrainConfig::seed, "seeds init, batches and sampling")
        .add("threads", &TrainConfig::threads, "CPU threads; 0 = all cores", at_least(0))
        .add("peak_gflops", &TrainConfig::peak_gflops,
             "peak GFLOP/s for MFU (of train.precision's arithmetic); 0 = measure at start",
             at_least(0))
        .add("eval_batches", &TrainConfig::eval_batches,
             "validation batches per periodic evaluation; 0 = the whole split", at_least(0))
        .add("final_eval_batches", &TrainConfig::final_eval_batches,
             "validation batches of the final evaluation; 0 = the whole split", at_least(0))
        .add("seq_warmup_steps", &TrainConfig::seq_warmup_steps,
             "steps trained at seq_warmup_len before seq_len (tokens per step kept)", at_least(0))
        .add("seq_warmup_len", &TrainConfig::seq_warmup_len,
             "sequence length during the warmup; must divide train.seq_len", at_least(0))
        .add("coord_interval", &TrainConfig::coord_interval,
             "steps between coordinate-check records in metrics.jsonl (0 = never)", at_least(0))
        .add("recompute", &TrainConfig::recompute,
             "activations the backward recomputes instead of keeping (same results, less memory)",
             one_of({"none", "attention", "block"}))
        .add("precision", &TrainConfig::precision,
             "the GEMMs' precision (bf16: bf16 operands, fp32 masters, sums and optimizer state; "
             "auto: bf16 where the CPU has native bf16 dot products)",
             one_of({"fp32", "bf16", "auto"}))
        .add("device", &TrainConfig::device,
             "where training runs: cpu; cuda (one process, GPU rank mod the visible count; what "
             "still needs the host is refused by name: see docs/cuda.md); auto: cuda where a "
             "GPU is visible and the run can use it, else cpu",
             one_of({"auto", "cpu", "cuda"}))
        .add("nan_policy", &TrainConfig::nan_policy,
             "a step whose loss or gradient norm is not finite, or whose loss spikes, is not "
             "applied; then halt (checkpoint the last good step, exit non-zero), skip (drop the "
             "update, count it) or rollback (reload the last checkpoint, skip "
             "rollback_skip_batches batches)",
             one_of({"halt", "skip", "rollback"}))
        .add("rollback_skip_batches", &TrainConfig::rollback_skip_batches,
             "nan_policy rollback: batches skipped after the reloaded checkpoint", at_least(0))
        .add("max_rollbacks", &TrainConfig::max_rollbacks,
             "nan_policy rollback: one more bad step after this many rollbacks halts", at_least(0))
        .add("spike_factor", &TrainConfig::spike_factor,
             "a loss above spike_factor x the mean of the last spike_window steps is a spike "
             "(logged, then nan_policy); 0 = off",
             at_least(0))
        .add("spike_window", &TrainConfig::spike_window,
             "steps in the running mean of spike_factor; spikes are checked once it is full",
             at_least(1))
        .add("debug_inject_nan_step", &TrainConfig::debug_inject_nan_step,
             "for tests only: the last rank's first gradient element becomes NaN at this step "
             "(once); 0 = never",
             at_least(0));

    Section<OptimConfig>(t, "optim", &Config::optim)
        .add("name", &OptimConfig::name, "optimizer", one_of({"adamw", "lion", "adafactor"}))
        .add("lr", &OptimConfig::lr, "peak learning rate", greater_than(0))
        .add("end_lr", &OptimConfig::end_lr, "learning rate at the end of the decay", at_least(0))
        .add("warmup_steps", &OptimConfig::warmup_steps, "steps of linear warmup", at_least(0))
        .add("warmup_start", &OptimConfig::warmup_start,
             "fraction of lr the warmup starts from (0 = lr / warmup_steps at the first step)",
             in_closed_open(0, 1))
        .add("schedule", &OptimConfig::schedule, "learning-rate schedule after the warmup",
             one_of({"cosine", "linear", "inverse_sqrt", "constant"}))
        .add("decay_steps", &OptimConfig::decay_steps,
             "step the decay ends at (warmup included), flat after it; 0 = train.steps",
             at_least(0))
        .add("weight_decay", &OptimConfig::weight_decay, "weight decay", at_least(0))
        .add("wd_mode", &OptimConfig::wd_mode,
             "coupled: decay scaled by the learning rate; independent: by the schedule only",
             one_of({"coupled", "independent"}))
        .add("decay_mask", &OptimConfig::decay_mask,
             "which parameters decay (matrices = every 2-D weight, embeddings included)",
             one_of({"matrices", "all", "none"}))
        .add("beta1", &OptimConfig::beta1, "first-moment decay (Lion: interpolation of the update)",
             in_closed_open(0, 1))
        .add("beta2", &OptimConfig::beta2, "second-moment decay (Lion: momentum decay)",
             in_closed_open(0, 1))
        .add("eps", &OptimConfig::eps, "AdamW epsilon", greater_than(0))
        .add("grad_clip", &OptimConfig::grad_clip, "clipping threshold; 0 = no clipping",
             at_least(0))
        .add("clip_mode", &OptimConfig::clip_mode,
             "norm: global L2 norm <= grad_clip; value: every element in [-grad_clip, grad_clip]",
             one_of({"norm", "value"}))
        .add("mup_rule", &OptimConfig::mup_rule,
             "per-tensor learning rates: sp (all lr), mup (matrices lr * d_base / d_model), "
             "abs_mup (matrices lr / fan_in)",
             one_of({"sp", "mup", "abs_mup"}))
        .add("mup_eps_scaling", &OptimConfig::mup_eps_scaling,
             "scale Adam's eps like each tensor's learning rate")
        .add("adafactor_decay_rate", &OptimConfig::adafactor_decay_rate,
             "Adafactor: the second moments decay by 1 - t^-decay_rate at step t", greater_than(0))
        .add("adafactor_min_dim_size_to_factor", &OptimConfig::adafactor_min_dim_size_to_factor,
             "Adafactor: a matrix whose dims are both at least this keeps row and column "
             "statistics instead of a full second moment",
             at_least(1))
        .add("adafactor_factored", &OptimConfig::adafactor_factored,
             "Adafactor: factor the second moments of large matrices (false: full everywhere)")
        .add("adafactor_eps", &OptimConfig::adafactor_eps, "Adafactor: added to g^2",
             greater_than(0))
        .add("adafactor_clipping_threshold", &OptimConfig::adafactor_clipping_threshold,
             "Adafactor: each tensor's update is scaled down to this RMS at most; 0 = off",
             at_least(0))
        .add("adafactor_multiply_by_parameter_scale",
             &OptimConfig::adafactor_multiply_by_parameter_scale,
             "Adafactor: steps relative to each tensor's RMS (at least 1e-3); false: lr is the "
             "absolute step");

    Section<LogConfig>(t, "log", &Config::log)
        .add("dir", &LogConfig::dir, "run directory; empty = runs/<config name>")
        .add("interval", &LogConfig::interval, "steps between log lines", at_least(1))
        .add("eval_interval", &LogConfig::eval_interval,
             "steps between validation passes; 0 = only at the end", at_least(0))
        .add("sample_tokens", &LogConfig::sample_tokens,
             "length of the sample printed at the end; 0 = none", at_least(0))
        .add("sample_prompt", &LogConfig::sample_prompt, "prompt of that sample")
        .add("tensorboard", &LogConfig::tensorboard,
             "also write TensorBoard event files into RUN_DIR/tb/ (every logged metric, the "
             "validation loss and the final sample)");

    Section<ParallelConfig>(t, "parallel", &Config::parallel)
        .add("data", &ParallelConfig::data,
             "data-parallel ranks; parallel.data x parallel.model must equal the number of ranks",
             at_least(1))
        .add("model", &ParallelConfig::model,
             "tensor-parallel (Megatron) ranks per replica; must divide heads, 4 x d_model and "
             "vocab",
             at_least(1))
        .add("zero_stage", &ParallelConfig::zero_stage,
             "ZeRO: 0 replicated, 1 shards optimizer state, 2 also gradients, 3 also parameters",
             in_closed_open(0, 4));

    Section<CheckpointConfig>(t, "checkpoint", &Config::checkpoint)
        .add("interval", &CheckpointConfig::interval,
             "steps between checkpoints (one is also written at the end); 0 = only on "
             "SIGINT/SIGTERM",
             at_least(0))
        .add("keep_last", &CheckpointConfig::keep_last, "newest checkpoints kept", at_least(1))
        .add("keep_every", &CheckpointConfig::keep_every,
             "also keep checkpoints whose step is a multiple of this; 0 = none", at_least(0))
        .add("only_better", &CheckpointConfig::only_better,
             "write a periodic checkpoint only when the validation loss improved")
        .add("max_shard_size", &CheckpointConfig::max_shard_size,
             "model.safetensors is split into HF-style shards above this size", byte_size())
        .add("resume", &CheckpointConfig::resume,
             "auto: continue from RUN_DIR/checkpoints/latest when it exists",
             one_of({"none", "auto"}))
        .add("on_error", &CheckpointConfig::on_error,
             "a checkpoint that cannot be written (full disk, I/O error): stop (exit non-zero) or "
             "continue (warn, train on, retry at the next checkpoint); the previous checkpoint "
             "stays intact either way",
             one_of({"stop", "continue"}));

    t.cross_checks = {
        [](const Config& c) -> std::optional<std::string> {
            // Tensor parallelism splits heads, key/value heads and the MLP width evenly; say so
            // before any rank builds a model.
            try {
                check_model_parallel_shapes(c.parallel.model, c.model.n_head, c.model.kv_heads(),
                                            c.model.mlp_width(),
                                            c.model.vq() ? c.model.vq_value_width() : 0);
            } catch (const InvalidInput& e) {
                return "parallel.model=" + std::to_string(c.parallel.model) + ": " + e.what();
            }
            return std::nullopt;
        },
        [](const Config& c) -> std::optional<std::string> {
            const auto& m = c.model;
            if (m.n_head < 1 || m.d_model < 1 || m.d_model % m.n_head == 0) return std::nullopt;
            return "model.n_head (" + std::to_string(m.n_head) + ") must divide model.d_model (" +
                   std::to_string(m.d_model) +
                   "); valid head counts: " + divisors_near(m.d_model, m.n_head);
        },
        [](const Config& c) -> std::optional<std::string> {
            try {
                check_model_config(c.model);
            } catch (const InvalidInput& e) {
                return std::string(e.what());
            }
            return std::nullopt;
        },
        [](const Config& c) -> std::optional<std::string> {
            // Truncated backpropagation: whole chunks, and steps / checkpoints at batch ends
            // (the carried state is not in a checkpoint).
            const int U = c.model.vq_update_len, T = c.train.seq_len;
            if (U == 0) return std::nullopt;
            if (!c.model.vq()) return "model.vq.update_len needs model.attention vq";
            if (T % U != 0)
                return "model.vq.update_len (" + std::to_string(U) +
                       ") must divide train.seq_len (" + std::to_string(T) + ")";
            const long n = T / U;
            if (n > 1 && c.train.seq_warmup_steps > 0)
                return "model.vq.update_len below train.seq_len needs train.seq_warmup_steps 0";
            if (n > 1 && (c.train.steps % n != 0 || c.checkpoint.interval % n != 0))
                return "model.vq.update_len splits each row into " + std::to_string(n) +
                       " optimizer steps: train.steps (" + std::to_string(c.train.steps) +
                       ") and checkpoint.interval (" + std::to_string(c.checkpoint.interval) +
                       ") must be multiples of " + std::to_string(n);
            return std::nullopt;
        },
        [](const Config& c) -> std::optional<std::string> {
            if (c.train.seq_len <= c.model.max_seq_len) return std::nullopt;
            return "train.seq_len (" + std::to_string(c.train.seq_len) +
                   ") must be <= model.max_seq_len (" + std::to_string(c.model.max_seq_len) + ")";
        },
        [](const Config& c) -> std::optional<std::string> {
            if (c.data.tokenizer != "byte" || c.model.vocab_size >= 257) return std::nullopt;
            return "model.vocab_size (" + std::to_string(c.model.vocab_size) +
                   ") must be >= 257 when data.tokenizer is 'byte' (256 byte values + "
                   "end-of-document)";
        },
        [](const Config& c) -> std::optional<std::string> {
            const auto& t = c.train;
            if (t.seq_warmup_steps == 0) return std::nullopt;
            if (t.seq_warmup_len >= 1 && t.seq_warmup_len <= t.seq_len &&
                t.seq_len % t.seq_warmup_len == 0)
                return std::nullopt;
            return "train.seq_warmup_len (" + std::to_string(t.seq_warmup_len) +
                   ") must divide train.seq_len (" + std::to_string(t.seq_len) +
                   ") when train.seq_warmup_steps > 0; valid lengths: " +
                   divisors_near(t.seq_len, t.seq_warmup_len);
        },
        [](const Config& c) -> std::optional<std::string> {
            if (c.model.init_from_layers.empty() || !c.model.init_from.empty()) return std::nullopt;
            return std::string(
                "model.init_from_layers maps the blocks of model.init_from: set "
                "model.init_from too");
        },
        [](const Config& c) -> std::optional<std::string> {
            const auto& o = c.optim;
            if (o.decay_steps == 0 || o.decay_steps > o.warmup_steps) return std::nullopt;
            return "optim.decay_steps (" + std::to_string(o.decay_steps) +
                   ") must be 0 (= train.steps) or past optim.warmup_steps (" +
                   std::to_string(o.warmup_steps) + "): the decay starts after the warmup";
        },
        [](const Config& c) -> std::optional<std::string> {
            if (c.data.val_fraction + c.data.test_fraction < 1) return std::nullopt;
            return std::string("data.val_fraction + data.test_fraction must be < 1");
        },
        [](const Config& c) -> std::optional<std::string> {
            if (!c.data.tokenizer.empty()) return std::nullopt;
            return std::string("data.tokenizer must be set (byte, or a tokenizer file)");
        },
        [](const Config& c) -> std::optional<std::string> {
            if (c.data.synthetic || !c.data.path.empty()) return std::nullopt;
            return std::string("data.path must be set unless data.synthetic is true");
        },
        [](const Config& c) -> std::optional<std::string> {
            if (c.train.nan_policy != "rollback" || c.checkpoint.interval > 0) return std::nullopt;
            return std::string(
                "train.nan_policy=rollback reloads the last periodic checkpoint: set "
                "checkpoint.interval > 0 (or train.nan_policy to halt or skip)");
        },
    };
    return t;
}

const OptionTable& option_table() {
    static const OptionTable table = build_table();
    return table;
}

// ---------------------------------------------------------------------------------------------
// Loading.

std::pair<std::string_view, std::string_view> split_key(std::string_view key) {
    const auto dot = key.find('.');
    if (dot == std::string_view::npos) return {std::string_view{}, key};
    return {key.substr(0, dot), key.substr(dot + 1)};
}

// The valid key closest to `key`: whole-key edit distance, or the same leaf name in another
// section at a small penalty (so `model.lr` suggests `optim.lr`). Ties go to table order.
// Empty when nothing is close enough to be a plausible typo.
std::string closest_key(const OptionTable& table, std::string_view key) {
    const auto [section, leaf] = split_key(key);
    const std::size_t limit = 2 + leaf.size() / 4;  // farther is no plausible typo
    std::string best;
    std::size_t best_score = static_cast<std::size_t>(-1);
    for (const auto& o : table.options) {
        if (best_score == 0) break;
        const std::size_t cap = std::min(limit, best_score - 1);  // only a closer one matters
        const auto [o_section, o_leaf] = split_key(o.key);
        const std::size_t penalty = o_section == section ? 0 : 1;
        const std::size_t score =
            std::min(edit_distance(key, o.key, cap), edit_distance(leaf, o_leaf, cap) + penalty);
        if (score < best_score) best_score = score, best = o.key;
    }
    return best_score <= limit ? best : std::string();
}

std::string join(const std::vector<std::string>& items, std::string_view sep) {
    std::string out;
    for (std::size_t i = 0; i < items.size(); ++i) {
        if (i) out += sep;
        out += items[i];
    }
    return out;
}

std::string unknown_key_message(const OptionTable& table, const std::string& key) {
    std::string msg = "unknown config key '" + key + "'";
    const auto section = std::string(split_key(key).first);
    const bool reserved = table.has_section(section) &&
                          std::none_of(table.options.begin(), table.options.end(),
                                       [&](const Option& o) { return o.section == section; });
    if (section.empty())
        msg += " (keys look like section.key)";
    else if (!table.has_section(section))
        msg += " (there is no section '" + section + "'; sections: " + join(table.sections, ", ") +
               ")";
    else if (reserved)
        msg += " (section '" + section + "' is reserved and has no keys yet)";
    if (const auto best = closest_key(table, key); !best.empty())
        return msg + "; did you mean '" + best + "'?";
    if (table.has_section(section) && !reserved) {
        std::vector<std::string> keys;
        for (const auto& o : table.options)
            if (o.section == section) keys.push_back(o.key.substr(section.size() + 1));
        return msg + "; keys in '" + section + "': " + join(keys, ", ");
    }
    return msg;
}

std::string unknown_section_message(const OptionTable& table, const std::string& section) {
    std::string msg = "unknown config section '" + section + "'";
    const std::string best = closest_word(section, table.sections);
    if (!best.empty()) msg += "; did you mean '" + best + "'?";
    return msg + " (sections: " + join(table.sections, ", ") + ")";
}

const char* kind_name(const YAML::Node& n) {
    switch (n.Type()) {
        case YAML::NodeType::Null:
            return "an empty value";
        case YAML::NodeType::Scalar:
            return "a scalar";
        case YAML::NodeType::Sequence:
            return "a sequence";
        case YAML::NodeType::Map:
            return "a mapping";
        default:
            return "an undefined value";
    }
}

RawValue raw_value(const YAML::Node& n) {
    switch (n.Type()) {
        case YAML::NodeType::Scalar:
            return {RawValue::Kind::scalar, n.Scalar()};
        case YAML::NodeType::Sequence:
            return {RawValue::Kind::sequence, {}};
        case YAML::NodeType::Map:
            return {RawValue::Kind::map, {}};
        default:
            return {RawValue::Kind::null, {}};
    }
}

// Where a value came from, to prefix (file position) or suffix (override) messages.
struct Source {
    std::string file;  // non-empty for a YAML file
    YAML::Mark mark;
    std::string override_text;  // non-empty for an override

    std::string wrap(const std::string& msg) const {
        if (!file.empty()) {
            if (mark.is_null()) return file + ": " + msg;
            return file + ":" + std::to_string(mark.line + 1) + ":" +
                   std::to_string(mark.column + 1) + ": " + msg;
        }
        if (!override_text.empty()) return msg + " (from override '" + override_text + "')";
        return msg;
    }
};

class Loader {
  public:
    explicit Loader(const OptionTable& table) : table_(table) {}

    void load_file(const std::string& path);
    // YAML text read as the file `name` (in messages).
    void load_text(const std::string& text, const std::string& name);
    // The built-in default recipe as the bottom layer: its keys do not count as given.
    void load_default_recipe() {
        load_text(default_recipe_yaml(), kDefaultRecipe);
        origin_.clear();
        file_names_.clear();
    }
    void apply_override(const std::string& text);
    void validate();
    Config take(const std::string& name);
    // The keys (current names) the file or an override set so far.
    std::vector<std::string> keys_given() const {
        std::vector<std::string> keys;
        for (const auto& [key, src] : origin_) keys.push_back(key);
        return keys;
    }

  private:
    void set(const std::string& key, const RawValue& value, const Source& src);
    void error(std::string msg) { errors_.push_back(std::move(msg)); }

    const OptionTable& table_;
    Config config_;
    std::map<std::string, Source> origin_;  // key -> where its current value came from
    // current key -> the name it was given by, in the file and in the overrides
    std::map<std::string, std::string> file_names_, override_names_;
    std::vector<std::string> errors_;
};

void Loader::set(const std::string& key, const RawValue& value, const Source& src) {
    const Option* opt = table_.find(key);
    if (!opt) return error(src.wrap(unknown_key_message(table_, key)));
    const std::string current = opt->current.empty() ? key : opt->current;
    const std::string before = opt->dump(config_);
    if (auto err = opt->assign(config_, value)) return error(src.wrap(*err));
    // Two names of one key in one source: configs saved before older names stopped being
    // written hold both with one value, which is accepted; two values are refused.
    auto& names = src.file.empty() ? override_names_ : file_names_;
    const auto [seen, fresh] = names.emplace(current, key);
    if (!fresh && seen->second != key && opt->dump(config_) != before)
        return error(src.wrap(key + " and " + seen->second + " are two names of one key (" +
                              current + ") with different values; give only " + current));
    origin_[current] = src;
}

void Loader::load_file(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::exists(path, ec)) MESHLM_INVALID("config file '", path, "' not found");
    if (fs::is_directory(path, ec))
        MESHLM_INVALID("config file '", path, "' is a directory, expected a YAML file");
    std::ifstream in(path, std::ios::binary);
    if (!in.is_open()) MESHLM_INVALID("cannot open config file '", path, "'");
    std::stringstream text;
    if (in.peek() != std::ifstream::traits_type::eof()) text << in.rdbuf();
    if (in.bad()) MESHLM_INVALID("cannot read config file '", path, "'");
    load_text(text.str(), path);
}

void Loader::load_text(const std::string& text, const std::string& path) {
    const YAML::Node root = [&] {
        try {
            return load_single_yaml_document(text, path);
        } catch (const YAML::Exception& e) {
            MESHLM_INVALID(path, ":", e.mark.line + 1, ":", e.mark.column + 1,
                           ": malformed YAML: ", e.msg);
        }
    }();
    if (root.IsNull()) return;  // an empty file: defaults

    const std::string sections = join(table_.sections, ", ");
    if (!root.IsMap())
        throw InvalidInput(
            Source{path, root.Mark(), {}}.wrap("the top level must be a mapping of sections (" +
                                               sections + "), got " + kind_name(root)));

    std::map<std::string, int> seen;  // key (section or section.key) -> line of first sight
    auto first_sight = [&](const std::string& key, const YAML::Node& node) {
        const auto [it, fresh] = seen.emplace(key, node.Mark().line + 1);
        if (!fresh)
            error(Source{path, node.Mark(), {}}.wrap("duplicate key '" + key +
                                                     "' (first set on line " +
                                                     std::to_string(it->second) + ")"));
        return fresh;
    };

    // Range-for keeps each (key, value) pair alive; `it->first` would point into a temporary.
    for (const auto& entry : root) {
        const YAML::Node& name_node = entry.first;
        const YAML::Node& body = entry.second;
        const Source at{path, name_node.Mark(), {}};
        if (!name_node.IsScalar()) {
            error(at.wrap("section names must be plain words (" + sections + ")"));
            continue;
        }
        const std::string section = name_node.Scalar();
        if (!first_sight(section, name_node)) continue;
        if (!table_.has_section(section) && !(body.IsMap() && body.size() > 0)) {
            error(at.wrap(unknown_section_message(table_, section)));
            continue;  // (a non-empty mapping falls through: each key gets its own message)
        }
        if (body.IsNull()) continue;  // `model:` with nothing under it
        if (!body.IsMap()) {
            error(at.wrap("section '" + section + "' must be a mapping of key: value, got " +
                          kind_name(body)));
            continue;
        }
        for (const auto& kv : body) {
            const Source key_at{path, kv.first.Mark(), {}};
            if (!kv.first.IsScalar()) {
                error(key_at.wrap("keys in section '" + section + "' must be plain words"));
                continue;
            }
            const std::string key = section + "." + kv.first.Scalar();
            if (!first_sight(key, kv.first)) continue;
            // A group of keys (model.mup.*) may nest one level deeper.
            const bool group =
                kv.second.IsMap() && !table_.find(key) &&
                std::any_of(table_.options.begin(), table_.options.end(),
                            [&](const auto& o) { return o.key.starts_with(key + "."); });
            if (!group) {
                set(key, raw_value(kv.second), key_at);
                continue;
            }
            for (const auto& sub : kv.second) {
                const Source sub_at{path, sub.first.Mark(), {}};
                const std::string sub_key = key + "." + sub.first.as<std::string>();
                if (first_sight(sub_key, sub.first)) set(sub_key, raw_value(sub.second), sub_at);
            }
        }
    }
}

void Loader::apply_override(const std::string& text) {
    const Source src{{}, YAML::Mark::null_mark(), text};
    const auto eq = text.find('=');
    if (eq == std::string::npos || eq == 0)
        return error("config override '" + text + "' must look like section.key=value");
    const std::string key = text.substr(0, eq);
    const std::string value = text.substr(eq + 1);
    const Option* opt = table_.find(key);
    if (!opt) return error(src.wrap(unknown_key_message(table_, key)));

    // The value is read as a YAML scalar (so 1e-3, true, 'quoted' work). A string option takes
    // the raw text whenever YAML would not give a plain scalar ("", "~", "[x", "a: b").
    RawValue raw{RawValue::Kind::scalar, value};
    try {
        raw = raw_value(YAML::Load(value));
    } catch (const YAML::Exception&) {
        raw = {RawValue::Kind::scalar, value};
    }
    if (opt->is_string && raw.kind != RawValue::Kind::scalar) raw = {RawValue::Kind::scalar, value};
    set(key, raw, src);
}

void Loader::validate() {
    for (const auto& o : table_.options) {
        if (!o.current.empty()) continue;  // checked under its current name
        if (auto err = o.check(config_)) {
            const auto it = origin_.find(o.key);
            error(it == origin_.end() ? *err : it->second.wrap(*err));
        }
    }
    for (const auto& check : table_.cross_checks)
        if (auto err = check(config_)) error(*err);
}

Config Loader::take(const std::string& name) {
    if (errors_.size() == 1) throw InvalidInput(errors_[0]);
    if (!errors_.empty())
        throw InvalidInput(std::to_string(errors_.size()) + " problems in the config:\n  " +
                           join(errors_, "\n  "));
    config_.name = name;
    return std::move(config_);
}

}  // namespace

Config load_config(const std::string& path, const std::vector<std::string>& overrides,
                   std::vector<std::string>* keys_given) {
    Loader loader(option_table());
    const bool recipe = path == kDefaultRecipe;
    if (recipe)
        loader.load_default_recipe();
    else if (!path.empty())
        loader.load_file(path);
    for (const auto& o : overrides) loader.apply_override(o);
    loader.validate();
    if (keys_given) *keys_given = loader.keys_given();
    return loader.take(path.empty() || recipe ? "default"
                                              : std::filesystem::path(path).stem().string());
}

std::string config_to_yaml(const Config& c) {
    const OptionTable& table = option_table();
    std::string out;
    for (const auto& section : table.sections) {
        std::string body;
        for (const auto& o : table.options)
            if (o.section == section && o.current.empty())
                body += "  " + o.key.substr(section.size() + 1) + ": " + o.dump(c) + "\n";
        if (body.empty()) continue;  // reserved sections
        if (!out.empty()) out += "\n";
        out += section + ":\n" + body;
    }
    return out;
}

SplitArgs split_config_overrides(int argc, const char* const* argv) {
    static constexpr std::string_view prefix = "--config.";
    SplitArgs out;
    bool passthrough = false;  // after a bare "--" everything is positional
    for (int i = 0; i < argc; ++i) {
        const std::string arg = argv[i] ? argv[i] : "";
        if (i == 0 || passthrough || !arg.starts_with(prefix)) {
            if (i > 0 && arg == "--") passthrough = true;
            out.args.push_back(arg);
            continue;
        }
        const std::string rest = arg.substr(prefix.size());
        const auto eq = rest.find('=');
        if (rest.empty() || eq == 0)
            MESHLM_INVALID("config override '", arg,
                           "' names no key; use --config.section.key=VALUE");
        if (eq != std::string::npos) {
            out.overrides.push_back(rest);
            continue;
        }
        const bool has_value =
            i + 1 < argc && argv[i + 1] && !std::string_view(argv[i + 1]).starts_with("--");
        if (!has_value)
            MESHLM_INVALID("config override '", arg, "' needs a value: use ", arg, "=VALUE or ",
                           arg, " VALUE");
        out.overrides.push_back(rest + "=" + argv[++i]);
    }
    return out;
}

std::vector<ModelKeyChange> model_changes(const Config& before, const Config& after) {
    // Keys that only matter before the first step (how fresh weights are drawn, where warm-start
    // weights come from) or only to training's regularization (dropout, z-loss: fine-tuning may
    // change them): the function the weights compute does not depend on them.
    static const std::vector<std::string> not_computation = {
        "model.init_std",     "model.init_from",     "model.init",      "model.dropout_embd",
        "model.dropout_attn", "model.dropout_resid", "model.z_loss",    "model.init_from_layers",
        "model.mup.u_init",   "model.mup.q_init",    "model.mup.r_init"};
    std::vector<ModelKeyChange> out;
    for (const auto& o : option_table().options) {
        if (o.section != "model" || !o.current.empty() ||
            std::find(not_computation.begin(), not_computation.end(), o.key) !=
                not_computation.end())
            continue;
        const std::string a = o.dump(before), b = o.dump(after);
        if (a != b) out.push_back({o.key, a, b});
    }
    return out;
}

std::string config_summary(const Config& c) {
    const OptionTable& table = option_table();
    auto v = [&](const char* key) { return table.find(key)->dump(c); };
    // The shape always; the architecture keys where they differ from the defaults (GPT-2's).
    static const Config defaults;
    std::string model;
    for (const auto& o : table.options) {
        if (o.section != "model" || o.key == "model.init_from" || !o.current.empty()) continue;
        const bool shape = o.key == "model.n_layer" || o.key == "model.d_model" ||
                           o.key == "model.n_head" || o.key == "model.vocab_size" ||
                           o.key == "model.max_seq_len";
        if (shape || o.dump(c) != o.dump(defaults))
            model += (model.empty() ? "" : " ") + o.key.substr(6) + "=" + o.dump(c);
    }
    std::string out = "  model: " + model + "\n";
    if (!c.model.init_from.empty()) out += "  init_from: " + c.model.init_from + "\n";
    out += "  data: " + (c.data.synthetic ? std::string("synthetic") : c.data.path) +
           " | tokenizer " + c.data.tokenizer + " | cache " + c.data.cache_dir + "\n";
    out += "  train: steps=" + v("train.steps") + " batch_size=" + v("train.batch_size") +
           " seq_len=" + v("train.seq_len") + " grad_accum=" + v("train.grad_accum") +
           " seed=" + v("train.seed") + "\n";
    out += "  optim: " + c.optim.name + " lr=" + v("optim.lr") + " -> " + v("optim.end_lr") + " (" +
           c.optim.schedule + ", warmup " + v("optim.warmup_steps") +
           (c.optim.decay_steps > 0 ? ", decay to step " + v("optim.decay_steps") : "") +
           ") weight_decay=" + v("optim.weight_decay") +
           (c.optim.wd_mode == "independent" ? " (independent)" : "") + " clip " +
           c.optim.clip_mode + " " + v("optim.grad_clip") + "\n";
    out += "  parallel: data=" + v("parallel.data") + " model=" + v("parallel.model") +
           " zero_stage=" + v("parallel.zero_stage") + "\n";
    out += "  run directory: " + c.log.dir + "\n";
    return out;
}

std::vector<std::string> config_keys() {
    std::vector<std::string> keys;
    for (const auto& o : option_table().options)
        if (o.current.empty()) keys.push_back(o.key);
    return keys;
}

std::vector<OptionInfo> config_options() {
    const Config defaults;
    std::vector<OptionInfo> out;
    for (const auto& o : option_table().options)
        out.push_back(
            {o.section, o.key, o.type, o.dump(defaults), o.constraint, o.help, o.current});
    return out;
}

void check_config_overrides(const std::vector<std::string>& overrides) {
    Loader loader(option_table());
    for (const auto& o : overrides) loader.apply_override(o);
    loader.take("default");  // throws the problems found; the values' ranges are not checked
}

std::string config_help() {
    const OptionTable& table = option_table();
    const Config defaults;
    std::size_t width = 0;
    for (const auto& o : table.options) width = std::max(width, o.key.size());
    std::string out;
    for (const auto& o : table.options) {
        if (!o.current.empty()) continue;  // older names: `meshlm config --list`
        std::string line = "  " + o.key + std::string(width - o.key.size() + 2, ' ') + o.type +
                           " = " + o.dump(defaults);
        if (!o.constraint.empty()) line += " (" + o.constraint + ")";
        out += line + "\n" + std::string(width + 6, ' ') + o.help + "\n";
    }
    return out;
}

}  // namespace meshlm
