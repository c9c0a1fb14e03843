#include "meshlm/io/checkpoint.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "meshlm/core/atomic_file.h"
#include "meshlm/core/byte_size.h"
#include "meshlm/core/error.h"
#include "meshlm/core/file_sync.h"
#include "meshlm/data/json_int.h"
#include "meshlm/io/safetensors.h"
#include "meshlm/io/safetensors_set.h"
#include "meshlm/io/shard_format.h"
#include "meshlm/io/state_tensors.h"
#include "meshlm/io/weights.h"
#include "meshlm/model/transformer.h"
#include "meshlm/model/transformer_layout.h"

namespace fs = std::filesystem;

namespace meshlm {
namespace {

constexpr const char* kFormat = "meshlm-checkpoint";

std::string checkpoints_root(const std::string& run_dir) {
    return run_dir + "/checkpoints";
}

std::string step_name(long step) {
    return "step_" + std::to_string(step);
}

// Test hook: MESHLM_FAULT=<point> kills the process at that point of a checkpoint write, as a
// power cut or SIGKILL would (no cleanup, no unwinding).
void fault_point(const char* point) {
    const char* f = std::getenv("MESHLM_FAULT");
    if (f && std::string(f) == point) ::_exit(86);
}

void write_optimizer(const std::string& path, const ParamLayout& layout, const float* m,
                     const float* v, long optim_step, const std::vector<StateTensor>& stat_tensors,
                     const float* stats) {
    std::vector<SafetensorsTensor> tensors;
    const std::int32_t step = static_cast<std::int32_t>(optim_step);
    tensors.push_back({"step", DType::i32, Shape{1}, &step});
    // Lion keeps no second moment, Adafactor no first, nor second moments where it factors.
    for (const auto& [kind, slot] : {std::pair{"exp_avg.", m}, {"exp_avg_sq.", v}})
        if (slot)
            for (const auto& s : layout.slices())
                if (!(slot == v && has_factored_stats(stat_tensors, s.name)))
                    tensors.push_back({kind + s.name, DType::f32, s.shape, slot + s.offset});
    add_stat_tensors(tensors, stat_tensors, stats);
    write_safetensors(path, tensors, {{"format", kFormat}});
}

}  // namespace

std::optional<std::string> checkpoint_run_id(const std::string& dir) {
    std::ifstream in(dir + "/trainer.json");
    if (!in) return std::nullopt;
    try {
        return nlohmann::json::parse(in).value("run_id", std::string());
    } catch (const nlohmann::json::exception&) {
        return std::nullopt;
    }
}

nlohmann::json read_checkpoint_json(const std::string& path) {
    std::ifstream in(path);
    if (!in) MESHLM_INVALID(path, " is missing or unreadable");
    try {
        return nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& e) {
        MESHLM_INVALID(path, " is not valid JSON (", e.what(), "); the checkpoint is damaged");
    }
}

std::vector<std::pair<long, std::string>> list_checkpoints(const std::string& run_dir) {
    std::vector<std::pair<long, std::string>> out;
    const std::string root = checkpoints_root(run_dir);
    if (!fs::is_directory(root)) return out;
    for (const auto& e : fs::directory_iterator(root)) {
        const std::string name = e.path().filename().string();
        if (!e.is_directory() || name.rfind("step_", 0) != 0) continue;
        char* end = nullptr;
        const long step = std::strtol(name.c_str() + 5, &end, 10);
        if (*end == '\0' && end != name.c_str() + 5) out.emplace_back(step, e.path().string());
    }
    std::sort(out.begin(), out.end());
    return out;
}

std::string checkpoint_staging_path(const std::string& run_dir, long step) {
    return checkpoints_root(run_dir) + "/.tmp-" + step_name(step);
}

std::string stage_checkpoint(const std::string& run_dir, long step) {
    const std::string root = checkpoints_root(run_dir);
    fs::create_directories(root);
    // Leftovers of writes that were killed midway.
    for (const auto& e : fs::directory_iterator(root))
        if (e.path().filename().string().rfind(".tmp-", 0) == 0) fs::remove_all(e.path());
    const std::string tmp = checkpoint_staging_path(run_dir, step);
    fs::create_directories(tmp);
    return tmp;
}

nlohmann::json file_record(const std::string& path) {
    return {{"bytes", fs::file_size(path)}, {"crc32", file_crc32(path)}};
}

std::string publish_checkpoint(const std::string& run_dir, const std::string& tmp,
                               const TrainerState& state, nlohmann::json files, int version,
                               const nlohmann::json& layout, const CheckpointConfig& cfg) {
    // The config also as a file, so a checkpoint opens like a run directory (sample, eval).
    write_file_atomic(tmp + "/config.yaml", state.config_yaml);
    files["config.yaml"] = file_record(tmp + "/config.yaml");
    nlohmann::json j = {{"format", kFormat},
                        {"version", version},
                        {"meshlm_version", MESHLM_VERSION},
                        {"step", state.step},
                        {"tokens_seen", state.tokens_seen},
                        {"loader", state.loader},
                        {"rng", {{"seed", state.seed}, {"batches", "Philox(seed, step)"}}},
                        {"best_val_loss", state.best_val ? nlohmann::json(*state.best_val)
                                                         : nlohmann::json(nullptr)},
                        {"config", state.config_yaml},
                        {"run_id", state.run_id},
                        {"files", files}};
    if (!layout.is_null()) j["layout"] = layout;
    if (state.batch_offset != 0) {  // rollbacks skipped synthetic batches
        j["rng"]["batch_offset"] = state.batch_offset;
        j["rng"]["batches"] = "Philox(seed, step + batch_offset)";
    }
    write_file_atomic(tmp + "/trainer.json", j.dump(2) + "\n");
    fsync_dir(tmp);

    // Rewriting a step (a resumed run passing the same step again): move the old one aside
    // first; `latest` keeps pointing at a complete directory throughout.
    const std::string root = checkpoints_root(run_dir), name = step_name(state.step);
    const std::string final_dir = root + "/" + name;
    std::string old;
    if (fs::exists(final_dir)) {
        old = root + "/.tmp-old-" + name;
        fs::remove_all(old);
        fs::rename(final_dir, old);
    }
    fs::rename(tmp, final_dir);
    fsync_dir(root);
    fault_point("checkpoint_latest");
    try {
        write_file_atomic(root + "/latest", name + "\n");
    } catch (...) {
        // `latest` still names the previous checkpoint: the new one goes (the old one of this
        // step comes back), so that no directory stays that `latest` does not account for.
        std::error_code ec;
        fs::remove_all(final_dir, ec);
        if (!old.empty()) fs::rename(old, final_dir, ec);
        throw;
    }
    fsync_dir(root);
    if (!old.empty()) fs::remove_all(old);

    // Rotation: the newest keep_last, plus every keep_every-th step; never the one just written.
    // Only this run's checkpoints count: another run's (or one that records no run) are never
    // deleted.
    auto all = list_checkpoints(run_dir);
    std::erase_if(all, [&](const auto& c) { return checkpoint_run_id(c.second) != state.run_id; });
    const std::size_t keep_last = static_cast<std::size_t>(std::max(cfg.keep_last, 1));
    for (std::size_t i = 0; i + keep_last < all.size(); ++i) {
        const auto& [step, path] = all[i];
        if (step == state.step) continue;
        if (cfg.keep_every > 0 && step % cfg.keep_every == 0) continue;
        fs::remove_all(path);
    }
    return final_dir;
}

std::string write_checkpoint(const std::string& run_dir, const TrainerState& state,
                             const ParamLayout& layout, const float* params, const float* m,
                             const float* v, long optim_step, const CheckpointConfig& cfg,
                             const std::vector<StateTensor>& stat_tensors, const float* stats) {
    const std::string tmp = stage_checkpoint(run_dir, state.step);
    try {
        std::vector<SafetensorsTensor> weights;
        for (const auto& s : layout.slices())
            weights.push_back({s.name, DType::f32, s.shape, params + s.offset});
        const auto model_files = write_safetensors_sharded(
            tmp, "model", weights, {{"format", "meshlm"}, {"step", std::to_string(state.step)}},
            parse_byte_size(cfg.max_shard_size, "checkpoint.max_shard_size"));
        fault_point("checkpoint_files");
        write_optimizer(tmp + "/optimizer.safetensors", layout, m, v, optim_step, stat_tensors,
                        stats);
        nlohmann::json files = nlohmann::json::object();
        std::vector<std::string> names = model_files;
        names.push_back("optimizer.safetensors");
        for (const auto& f : names) files[f] = file_record(tmp + "/" + f);
        return publish_checkpoint(run_dir, tmp, state, files, kSingleFileCheckpointVersion, nullptr,
                                  cfg);
    } catch (...) {
        // A failed write (a full disk, an I/O error) leaves no partial files behind; the
        // previous checkpoint and `latest` were never touched.
        std::error_code ec;
        fs::remove_all(tmp, ec);
        throw;
    }
}

std::optional<std::string> latest_checkpoint(const std::string& run_dir) {
    const std::string pointer = checkpoints_root(run_dir) + "/latest";
    std::ifstream in(pointer);
    if (!in) return std::nullopt;
    std::string name;
    std::getline(in, name);
    if (name.rfind("step_", 0) != 0 || name.find('/') != std::string::npos)
        MESHLM_INVALID(pointer, " holds '", name, "', not a checkpoint name like step_1000");
    const std::string dir = checkpoints_root(run_dir) + "/" + name;
    if (!fs::is_directory(dir))
        MESHLM_INVALID(pointer, " points at ", name, ", which does not exist");
    return dir;
}

bool is_checkpoint_dir(const std::string& path) {
    return fs::exists(path + "/trainer.json");
}

std::string resolve_checkpoint(const std::string& path) {
    if (is_checkpoint_dir(path)) return path;
    if (!fs::is_directory(path)) MESHLM_INVALID("checkpoint path ", path, " does not exist");
    if (auto dir = latest_checkpoint(path)) return *dir;
    MESHLM_INVALID(path,
                   " is neither a checkpoint directory (with trainer.json) nor a run directory "
                   "with checkpoints/latest");
}

std::string checkpoint_run_dir(const std::string& checkpoint_dir) {
    // Spelled as the checkpoint was (runs/a/checkpoints/step_4 -> runs/a), so that the run's
    // config and messages keep the user's relative path; absolute when that cannot be done
    // lexically.
    fs::path p = fs::path(checkpoint_dir).lexically_normal();
    if (!p.has_filename()) p = p.parent_path();  // a trailing slash
    const fs::path run = p.parent_path().parent_path();
    const bool lexical = !run.empty() && std::none_of(run.begin(), run.end(),
                                                      [](const fs::path& c) { return c == ".."; });
    if (lexical) return run.string();
    p = fs::absolute(checkpoint_dir).lexically_normal();
    if (!p.has_filename()) p = p.parent_path();
    return p.parent_path().parent_path().string();
}

TrainerState read_checkpoint(const std::string& dir) {
    const std::string path = dir + "/trainer.json";
    const nlohmann::json j = read_checkpoint_json(path);
    TrainerState st;
    try {
        if (j.at("format") != kFormat)
            MESHLM_INVALID(path, " has format ", j.at("format").dump(), ", expected \"", kFormat,
                           "\"");
        const int version = j.at("version").is_number_integer() ? j.at("version").get<int>() : -1;
        if (version != kSingleFileCheckpointVersion && version != kShardedCheckpointVersion)
            MESHLM_INVALID(path, " has version ", j.at("version").dump(), "; this meshlm reads ",
                           kSingleFileCheckpointVersion, " (single-file) and ",
                           kShardedCheckpointVersion, " (sharded)");
        const bool sharded = version == kShardedCheckpointVersion;
        for (const auto& [file, info] : j.at("files").items()) {
            // A name inside the checkpoint directory, never a path out of it or the directory.
            if (file.empty() || file == "." || file == ".." || file.find('/') != std::string::npos)
                MESHLM_INVALID(path, " lists \"", file, "\", which is not a file name");
            const std::string p = dir + "/" + file;
            std::error_code ec;
            if (!fs::is_regular_file(p, ec))
                MESHLM_INVALID("checkpoint file ", p, " is missing (or not a regular file)");
            const auto bytes = json_int<std::uintmax_t>(info.at("bytes"));
            if (fs::file_size(p) != bytes)
                MESHLM_INVALID("checkpoint file ", p, " has ", fs::file_size(p),
                               " bytes but trainer.json records ", bytes,
                               " (truncated or replaced)");
            // Shards are checksummed as they are read (shard_format.h): a rank resuming at the
            // same layout reads only its own.
            if (sharded && file.rfind("shard-", 0) == 0) continue;
            const std::string crc = file_crc32(p);
            if (crc != info.at("crc32").get<std::string>())
                MESHLM_INVALID("checkpoint file ", p, " has CRC-32 ", crc,
                               " but trainer.json records ", info.at("crc32").get<std::string>(),
                               " (corrupted)");
        }
        for (const char* need : {sharded ? "layout.json" : "optimizer.safetensors", "config.yaml"})
            if (!j.at("files").contains(need)) MESHLM_INVALID(path, " does not list ", need);
        if (sharded) st.layout = j.at("layout");
        st.step = json_int<long>(j.at("step"));
        st.tokens_seen = json_int<std::uint64_t>(j.at("tokens_seen"));
        st.loader = j.at("loader");
        st.seed = json_int<std::uint64_t>(j.at("rng").at("seed"));
        st.batch_offset = json_int<long>(j.at("rng").value("batch_offset", nlohmann::json(0)));
        if (!j.at("best_val_loss").is_null()) st.best_val = j.at("best_val_loss").get<double>();
        st.config_yaml = j.at("config");
        st.run_id = j.value("run_id", std::string());
    } catch (const nlohmann::json::exception& e) {
        MESHLM_INVALID(path, " is missing a field or has a wrong type: ", e.what());
    }
    return st;
}

namespace {

// Reads optimizer.safetensors of a single-file checkpoint into m and v (null: not kept, as
// Lion's second and Adafactor's first moment) and the statistics; returns the step.
long read_optimizer(const std::string& dir, const ParamLayout& layout, float* m, float* v,
                    const std::vector<StateTensor>& stat_tensors, float* stats) {
    const std::string path = dir + "/optimizer.safetensors";
    SafetensorsFile f(path);
    // (Adafactor's factored tensors: zero in the slot, as the caller's buffers start.)
    auto stored = [&](const float* slot, const std::string& name) {
        return slot && !(slot == v && has_factored_stats(stat_tensors, name));
    };
    for (const auto& s : layout.slices())
        for (const auto& [kind, slot] : {std::pair{"exp_avg.", m}, {"exp_avg_sq.", v}}) {
            if (!stored(slot, s.name)) continue;
            const std::string name = kind + s.name;
            if (!f.has(name)) MESHLM_INVALID(path, ": missing tensor '", name, "'");
            const auto& e = f.entry(name);
            if (!(e.shape == s.shape) || e.dtype != DType::f32)
                MESHLM_INVALID(path, ": tensor '", name, "' is ", dtype_name(e.dtype), " ",
                               e.shape.str(), "; the model needs f32 ", s.shape.str());
        }
    const auto step = f.i32("step");
    if (step.size() != 1 || step[0] < 0) MESHLM_INVALID(path, ": tensor 'step' is malformed");
    read_stat_tensors(f, stat_tensors, stats);
    for (const auto& s : layout.slices())
        for (const auto& [kind, slot] : {std::pair{"exp_avg.", m}, {"exp_avg_sq.", v}}) {
            if (!stored(slot, s.name)) continue;
            auto a = f.f32(kind + s.name);
            std::copy(a.begin(), a.end(), slot + s.offset);
        }
    return step[0];
}

}  // namespace

void load_checkpoint_model(const std::string& dir, const ModelConfig& model, float* params) {
    const ParamLayout layout = transformer_layout(model);
    const auto manifest = checkpoint_manifest(dir, model);
    if (!manifest) return load_weights(dir, layout, params);
    assemble_shards(dir, *manifest, model, params, nullptr, nullptr);
}

long load_checkpoint_state(const std::string& dir, const ModelConfig& model, float* params,
                           float* m, float* v, const std::vector<StateTensor>& stat_tensors,
                           float* stats) {
    const ParamLayout layout = transformer_layout(model);
    if (const auto manifest = checkpoint_manifest(dir, model))
        return assemble_shards(dir, *manifest, model, params, m, v, stat_tensors, stats);
    load_weights(dir, layout, params);
    return read_optimizer(dir, layout, m, v, stat_tensors, stats);
}

}  // namespace meshlm
