#include "meshlm/io/shard_format.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <tuple>

#include "meshlm/core/atomic_file.h"
#include "meshlm/core/error.h"
#include "meshlm/core/file_sync.h"
#include "meshlm/core/tp_layout.h"
#include "meshlm/core/zero_chunk.h"
#include "meshlm/data/json_int.h"
#include "meshlm/io/safetensors.h"
#include "meshlm/io/state_tensors.h"
#include "meshlm/model/transformer_layout.h"

namespace fs = std::filesystem;

namespace meshlm {
namespace {

constexpr const char* kManifestFormat = "meshlm-sharded-checkpoint";
constexpr const char* kManifest = "layout.json";

// How a model rank holds a tensor (q | k | v and gate | up are row splits per section).
std::string split_name(const ParamSlice& s, int model) {
    if (model == 1 || s.split == TpSplit::replicated) return "replicated";
    if (s.split == TpSplit::columns) return "columns";
    std::string name = "rows";
    for (std::size_t i = 0; s.sections.size() > 1 && i < s.sections.size(); ++i)
        name += (i ? "|" : ":") + std::to_string(s.sections[i]);
    return name;
}

std::string crc_hex(std::uint32_t crc) {
    char hex[9];
    std::snprintf(hex, sizeof hex, "%08x", crc);
    return hex;
}

std::uint32_t crc_value(const std::string& path, const std::string& hex) {
    std::size_t used = 0;
    unsigned long v = 0;
    try {
        v = std::stoul(hex, &used, 16);
    } catch (const std::exception&) {
    }
    if (hex.size() != 8 || used != 8) MESHLM_INVALID(path, ": '", hex, "' is not a CRC-32");
    return static_cast<std::uint32_t>(v);
}

nlohmann::json shape_json(const Shape& s) {
    nlohmann::json a = nlohmann::json::array();
    for (int i = 0; i < s.ndim; ++i) a.push_back(s[i]);
    return a;
}

}  // namespace

ShardGeometry::ShardGeometry(const ModelConfig& cfg, int data_, int model_, int stage)
    : data(data_), model(model_), zero_stage(stage) {
    if (data < 1 || model < 1)
        MESHLM_INVALID("a layout needs at least one data and one model rank (got data ", data,
                       ", model ", model, ")");
    local = transformer_layout(cfg, model);
    check_zero_stage(zero_stage);
    chunk = zero_chunk(local.total(), data);
}

std::size_t ShardGeometry::count(int d) const {
    const std::size_t b = begin(d), total = local.total();
    return b < total ? std::min(b + chunk, total) - b : 0;
}

std::string shard_file_name(int data_index, int model_index) {
    return "shard-d" + std::to_string(data_index) + "-m" + std::to_string(model_index) +
           ".safetensors";
}

ShardFile write_shard_file(const std::string& dir, const ShardGeometry& g, int d, int m,
                           const float* params, const float* mom1, const float* mom2, long step,
                           const std::vector<StateTensor>& stat_tensors, const float* stats) {
    ShardFile f;
    f.data_index = d, f.model_index = m;
    f.begin = g.begin(d), f.count = g.count(d);
    f.name = shard_file_name(d, m);
    const Shape shape{static_cast<std::int64_t>(f.count)};
    const std::int32_t step32 = static_cast<std::int32_t>(step);
    const std::string path = dir + "/" + f.name;
    std::vector<SafetensorsTensor> tensors = {{"params", DType::f32, shape, params}};
    // Lion keeps no second moment, Adafactor no first.
    if (mom1) tensors.push_back({"exp_avg", DType::f32, shape, mom1});
    if (mom2) tensors.push_back({"exp_avg_sq", DType::f32, shape, mom2});
    add_stat_tensors(tensors, stat_tensors, stats);
    tensors.push_back({"step", DType::i32, Shape{1}, &step32});
    write_safetensors(path, tensors,
                      {{"format", "meshlm-checkpoint-shard"},
                       {"data_index", std::to_string(d)},
                       {"model_index", std::to_string(m)},
                       {"begin", std::to_string(f.begin)},
                       {"count", std::to_string(f.count)}});
    f.bytes = fs::file_size(path);
    f.crc32 = crc_value(path, file_crc32(path));
    return f;
}

nlohmann::json write_shard_manifest(const std::string& dir, const ModelConfig& cfg,
                                    const ShardGeometry& g, const std::vector<ShardFile>& shards,
                                    nlohmann::json& files) {
    nlohmann::json slices = nlohmann::json::array();
    for (const ParamSlice& s : g.local.slices())
        slices.push_back({{"name", s.name},
                          {"shape", shape_json(s.shape)},
                          {"offset", s.offset},
                          {"split", split_name(s, g.model)}});
    // Every model rank's local layout has the same shapes; each is listed for readers that
    // place shards by the manifest alone.
    nlohmann::json ranks = nlohmann::json::array();
    for (int m = 0; m < g.model; ++m) ranks.push_back({{"model_index", m}, {"slices", slices}});
    nlohmann::json list = nlohmann::json::array();
    for (const ShardFile& f : shards) {
        list.push_back({{"file", f.name},
                        {"data_index", f.data_index},
                        {"model_index", f.model_index},
                        {"begin", f.begin},
                        {"count", f.count},
                        {"bytes", f.bytes},
                        {"crc32", crc_hex(f.crc32)}});
        files[f.name] = {{"bytes", f.bytes}, {"crc32", crc_hex(f.crc32)}};
    }
    const nlohmann::json j = {{"format", kManifestFormat},
                              {"data", g.data},
                              {"model", g.model},
                              {"zero_stage", g.zero_stage},
                              {"chunk", g.chunk},
                              {"local_total", g.local.total()},
                              {"model_config",
                               {{"n_layer", cfg.n_layer},
                                {"d_model", cfg.d_model},
                                {"n_head", cfg.n_head},
                                {"vocab_size", cfg.vocab_size},
                                {"max_seq_len", cfg.max_seq_len}}},
                              {"model_ranks", ranks},
                              {"files", list}};
    const std::string path = dir + "/" + kManifest;
    write_file_atomic(path, j.dump(1) + "\n");
    files[kManifest] = file_record(path);
    return {{"manifest", kManifest},
            {"data", g.data},
            {"model", g.model},
            {"zero_stage", g.zero_stage},
            {"chunk", g.chunk}};
}

ShardManifest read_shard_manifest(const std::string& dir, const ModelConfig& cfg,
                                  const nlohmann::json& trainer_files) {
    const std::string path = dir + "/" + kManifest;
    const nlohmann::json j = read_checkpoint_json(path);
    try {
        if (j.at("format") != kManifestFormat)
            MESHLM_INVALID(path, " has format ", j.at("format").dump(), ", expected \"",
                           kManifestFormat, "\"");
        const int D = json_int<int>(j.at("data")), M = json_int<int>(j.at("model")),
                  S = json_int<int>(j.at("zero_stage"));
        // The layouts recomputed from the config; the manifest must describe exactly these.
        auto g = [&] {
            try {
                return ShardGeometry(cfg, D, M, S);
            } catch (const InvalidInput& e) {
                MESHLM_INVALID(path, " (data ", D, ", model ", M, ", zero_stage ", S,
                               ") does not fit the config: ", e.what());
            }
        }();
        const std::string other = " (was it written for another model config?)";
        if (json_int<std::size_t>(j.at("chunk")) != g.chunk ||
            json_int<std::size_t>(j.at("local_total")) != g.local.total())
            MESHLM_INVALID(path, " records chunk ", j.at("chunk"), " and local_total ",
                           j.at("local_total"), " but the config gives ", g.chunk, " and ",
                           g.local.total(), other);
        const auto& ranks = j.at("model_ranks");
        if (ranks.size() != static_cast<std::size_t>(M))
            MESHLM_INVALID(path, " lists ", ranks.size(), " model ranks, not ", M);
        for (int m = 0; m < M; ++m) {
            const auto& sl = ranks.at(m).at("slices");
            if (ranks.at(m).at("model_index") != m || sl.size() != g.local.slices().size())
                MESHLM_INVALID(path, ": model rank ", m, " lists ", sl.size(),
                               " slices, the config ", g.local.slices().size(), other);
            for (std::size_t i = 0; i < sl.size(); ++i) {
                const ParamSlice& s = g.local.slices()[i];
                const std::string split = split_name(s, M);
                if (sl[i].at("name") != s.name || sl[i].at("shape") != shape_json(s.shape) ||
                    sl[i].at("offset") != s.offset || sl[i].at("split") != split)
                    MESHLM_INVALID(path, ": model rank ", m, " slice ", i, " is ", sl[i].dump(),
                                   " but the config gives '", s.name, "' ", s.shape.str(), " at ",
                                   s.offset, " (", split, ")", other);
            }
        }
        const auto& list = j.at("files");
        const std::size_t n = static_cast<std::size_t>(D) * M;
        if (list.size() != n)
            MESHLM_INVALID(path, " lists ", list.size(), " shard files; data ", D, " x model ", M,
                           " needs ", n);
        ShardManifest out{std::move(g), std::vector<ShardFile>(n)};
        std::vector<bool> seen(n, false);
        for (const auto& e : list) {
            ShardFile f;
            f.data_index = json_int<int>(e.at("data_index"));
            f.model_index = json_int<int>(e.at("model_index"));
            f.name = e.at("file");
            f.begin = json_int<std::size_t>(e.at("begin"));
            f.count = json_int<std::size_t>(e.at("count"));
            f.bytes = json_int<std::uint64_t>(e.at("bytes"));
            f.crc32 = crc_value(path, e.at("crc32"));
            const int d = f.data_index, m = f.model_index;
            if (d < 0 || d >= D || m < 0 || m >= M || seen[d * M + m])
                MESHLM_INVALID(path, ": file entry ", e.dump(), " has a bad or repeated index");
            seen[d * M + m] = true;
            if (f.name != shard_file_name(d, m) || f.begin != out.geometry.begin(d) ||
                f.count != out.geometry.count(d))
                MESHLM_INVALID(path, ": file entry ", e.dump(), " should be ",
                               shard_file_name(d, m), " with begin ", out.geometry.begin(d),
                               " and count ", out.geometry.count(d));
            if (!trainer_files.contains(f.name) ||
                trainer_files.at(f.name).at("bytes") != f.bytes ||
                trainer_files.at(f.name).at("crc32") != e.at("crc32"))
                MESHLM_INVALID(path, ": ", f.name, " is not listed alike in trainer.json");
            out.files[static_cast<std::size_t>(d) * M + m] = f;
        }
        return out;
    } catch (const nlohmann::json::exception& e) {
        MESHLM_INVALID(path, " is missing a field or has a wrong type: ", e.what());
    }
}

std::optional<ShardManifest> checkpoint_manifest(const std::string& dir, const ModelConfig& cfg) {
    const nlohmann::json j = read_checkpoint_json(dir + "/trainer.json");
    if (!j.contains("layout")) return std::nullopt;
    return read_shard_manifest(dir, cfg, j.at("files"));
}

ShardChunk read_shard_file(const std::string& dir, const ShardManifest& manifest, int d, int m,
                           const std::vector<StateTensor>& stat_tensors) {
    const ShardFile& f = manifest.file(d, m);
    const std::string path = dir + "/" + f.name;
    if (!fs::exists(path)) MESHLM_INVALID("checkpoint file ", path, " is missing");
    if (fs::file_size(path) != f.bytes)
        MESHLM_INVALID("checkpoint file ", path, " has ", fs::file_size(path),
                       " bytes but layout.json records ", f.bytes, " (truncated or replaced)");
    const std::string crc = file_crc32(path);
    if (crc != crc_hex(f.crc32))
        MESHLM_INVALID("checkpoint file ", path, " has CRC-32 ", crc, " but layout.json records ",
                       crc_hex(f.crc32), " (corrupted)");
    SafetensorsFile st(path);
    const Shape shape{static_cast<std::int64_t>(f.count)};
    for (const char* name : {"params", "exp_avg", "exp_avg_sq"}) {
        // The optimizer's slots: Lion writes no exp_avg_sq, Adafactor no exp_avg.
        const bool optional = std::string(name) != "params";
        if (!st.has(name) && optional) continue;
        if (!st.has(name)) MESHLM_INVALID(path, ": missing tensor '", name, "'");
        const auto& e = st.entry(name);
        if (!(e.shape == shape) || e.dtype != DType::f32)
            MESHLM_INVALID(path, ": tensor '", name, "' is ", dtype_name(e.dtype), " ",
                           e.shape.str(), "; layout.json needs f32 ", shape.str());
    }
    const auto& meta = st.metadata();
    for (const auto& [key, want] : {std::pair<const char*, std::size_t>{"data_index", d},
                                    {"model_index", m},
                                    {"begin", f.begin},
                                    {"count", f.count}})
        if (!meta.count(key) || meta.at(key) != std::to_string(want))
            MESHLM_INVALID(path, ": metadata ", key, " is '", meta.count(key) ? meta.at(key) : "",
                           "', layout.json says ", want);
    const auto step = st.has("step") ? st.i32("step") : std::vector<std::int32_t>{};
    if (step.size() != 1 || step[0] < 0) MESHLM_INVALID(path, ": tensor 'step' is malformed");
    ShardChunk c;
    c.params = st.f32("params");
    if (st.has("exp_avg")) c.m = st.f32("exp_avg");
    if (st.has("exp_avg_sq")) c.v = st.f32("exp_avg_sq");
    std::size_t stat_floats = 0;
    for (const StateTensor& t : stat_tensors)
        stat_floats = std::max(stat_floats, t.offset + static_cast<std::size_t>(t.shape.numel()));
    c.stats.assign(stat_floats, 0.f);
    read_stat_tensors(st, stat_tensors, c.stats.data());
    c.step = step[0];
    return c;
}

long assemble_shards(const std::string& dir, const ShardManifest& manifest, const ModelConfig& cfg,
                     float* params, float* m, float* v,
                     const std::vector<StateTensor>& stat_tensors, float* stats) {
    const ShardGeometry& g = manifest.geometry;
    const ParamLayout full_layout = transformer_layout(cfg);
    const std::size_t full_total = full_layout.total(), n = g.local.total();
    // The buffers asked for (m and v may be left out) and the shard tensors that fill them.
    std::vector<float*> outs = {params};
    std::vector<std::vector<float> ShardChunk::*> parts = {&ShardChunk::params};
    if (m) outs.push_back(m), parts.push_back(&ShardChunk::m);
    if (v) outs.push_back(v), parts.push_back(&ShardChunk::v);
    std::vector<std::vector<float>> local(outs.size(), std::vector<float>(n));
    for (float* out : outs) std::fill_n(out, full_total, 0.f);
    long step = -1;
    for (int mi = 0; mi < g.model; ++mi) {
        for (int d = 0; d < g.data; ++d) {
            const bool first = mi == 0 && d == 0;
            ShardChunk c = read_shard_file(dir, manifest, d, mi,
                                           first ? stat_tensors : std::vector<StateTensor>{});
            if (first) std::copy(c.stats.begin(), c.stats.end(), stats);
            if (step >= 0 && c.step != step)
                MESHLM_INVALID(dir, "/", manifest.file(d, mi).name, ": optimizer step ", c.step,
                               " differs from the other shards' ", step);
            step = c.step;
            for (const auto& [want, got, what] :
                 {std::tuple{m, &c.m,
                             "first moments (exp_avg): it was written by an optimizer "
                             "without them (adafactor)"},
                  {v, &c.v,
                   "second moments (exp_avg_sq): it was written by an optimizer "
                   "without them (lion)"}})
                if (want && got->empty())
                    MESHLM_INVALID(dir, "/", manifest.file(d, mi).name, " has no ", what);
            const std::size_t at = std::min(g.begin(d), n);  // an empty last chunk may start past n
            for (std::size_t k = 0; k < outs.size(); ++k)
                std::copy((c.*parts[k]).begin(), (c.*parts[k]).end(), local[k].begin() + at);
        }
        for (std::size_t k = 0; k < outs.size(); ++k) {
            if (g.model == 1)
                std::copy_n(local[k].data(), n, outs[k]);
            else
                tp_place(full_layout, g.local, g.model, mi, local[k].data(), outs[k]);
        }
    }
    return step;
}

nlohmann::json write_shards_from_full(const std::string& dir, const ModelConfig& cfg,
                                      const ShardGeometry& g, const FullTrainingState& full,
                                      nlohmann::json& files) {
    const std::size_t n = g.local.total();
    // Lion keeps no second moment, Adafactor no first.
    const bool has_m = !full.m.empty(), has_v = !full.v.empty();
    std::vector<float> lp(n, 0.f), lm(has_m ? n : 0, 0.f), lv(has_v ? n : 0, 0.f);
    const ParamLayout full_layout = transformer_layout(cfg);
    std::vector<ShardFile> shards;
    for (int mi = 0; mi < g.model; ++mi) {
        const float* p = full.params.data();
        const float* m = has_m ? full.m.data() : nullptr;
        const float* v = has_v ? full.v.data() : nullptr;
        if (g.model > 1) {
            tp_scatter(full_layout, g.local, g.model, mi, full.params.data(), lp.data());
            if (has_m) tp_scatter(full_layout, g.local, g.model, mi, full.m.data(), lm.data());
            if (has_v) tp_scatter(full_layout, g.local, g.model, mi, full.v.data(), lv.data());
            p = lp.data(), m = has_m ? lm.data() : nullptr, v = has_v ? lv.data() : nullptr;
        }
        for (int d = 0; d < g.data; ++d) {
            const std::size_t at = std::min(g.begin(d), n);
            shards.push_back(write_shard_file(dir, g, d, mi, p + at, m ? m + at : nullptr,
                                              v ? v + at : nullptr, full.step, full.stat_tensors,
                                              full.stats.data()));
        }
    }
    return write_shard_manifest(dir, cfg, g, shards, files);
}

}  // namespace meshlm
