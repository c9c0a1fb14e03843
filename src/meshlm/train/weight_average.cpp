#include "meshlm/train/weight_average.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <sstream>

#include "meshlm/core/error.h"
#include "meshlm/core/file_sync.h"
#include "meshlm/io/safetensors.h"
#include "meshlm/io/weights.h"
#include "meshlm/train/all_ranks.h"
#include "meshlm/train/final_weights.h"

namespace meshlm {
namespace {

// "6,8,10"
std::string join_steps(const std::vector<long>& steps) {
    std::string out;
    for (long s : steps) out += (out.empty() ? "" : ",") + std::to_string(s);
    return out;
}

std::vector<long> parse_steps(const std::string& text) {
    std::vector<long> out;
    std::istringstream in(text);
    for (std::string s; std::getline(in, s, ',');) out.push_back(std::stol(s));
    return out;
}

// What a window file must match to continue: the mesh and this rank's chunk of it.
std::map<std::string, std::string> window_identity(const DeviceMesh& mesh, std::size_t begin,
                                                   std::size_t count) {
    return {{"data", std::to_string(mesh.data_size())},
            {"model", std::to_string(mesh.model_size())},
            {"begin", std::to_string(begin)},
            {"count", std::to_string(count)}};
}

std::string snapshot_name(long step) {
    return "step_" + std::to_string(step);
}

}  // namespace

std::string average_window_file(const std::string& checkpoint_dir, int d, int m) {
    return checkpoint_dir + "/average-d" + std::to_string(d) + "-m" + std::to_string(m) +
           ".safetensors";
}

WeightAverage::WeightAverage(const TrainConfig& tc, const ModelConfig& model,
                             const DeviceMesh& mesh, Learner& learner)
    : every_(tc.average_every),
      last_(tc.average_last),
      model_(model),
      mesh_(mesh),
      learner_(learner) {
    if (!on()) return;
    const Learner::LocalChunk c = learner_.local_chunk();
    begin_ = c.begin, count_ = c.count;
}

std::vector<long> WeightAverage::steps() const {
    std::vector<long> out;
    for (const Snapshot& s : window_) out.push_back(s.step);
    return out;
}

void WeightAverage::after_step(long done) {
    if (!on() || done % every_ != 0) return;
    const Learner::LocalChunk c = learner_.local_chunk();
    if (static_cast<int>(window_.size()) == last_) window_.pop_front();
    window_.push_back({done, std::vector<float>(c.params, c.params + c.count)});
}

void WeightAverage::drop_after(long step) {
    while (!window_.empty() && window_.back().step > step) window_.pop_back();
    written_step_ = -1;
}

std::vector<float> WeightAverage::mean() const {
    std::vector<double> sum(count_, 0.0);
    for (const Snapshot& s : window_)
        for (std::size_t i = 0; i < count_; ++i) sum[i] += s.params[i];
    std::vector<float> out(count_);
    const double n = static_cast<double>(window_.size());
    for (std::size_t i = 0; i < count_; ++i) out[i] = static_cast<float>(sum[i] / n);
    return out;
}

std::string WeightAverage::window_crc(const std::deque<Snapshot>& window) {
    Crc32 crc;
    for (const Snapshot& s : window) crc.add(s.params.data(), s.params.size() * sizeof(float));
    return crc.hex();
}

void WeightAverage::save_window(const std::string& dir) const {
    auto meta = window_identity(mesh_, begin_, count_);
    meta["steps"] = join_steps(steps());
    meta["crc32"] = window_crc(window_);
    std::vector<SafetensorsTensor> tensors;
    if (count_ > 0)
        for (const Snapshot& s : window_)
            tensors.push_back({snapshot_name(s.step), DType::f32,
                               Shape{static_cast<std::int64_t>(count_)}, s.params.data()});
    write_safetensors(average_window_file(dir, mesh_.data_index(), mesh_.model_index()), tensors,
                      meta);
}

std::string WeightAverage::after_checkpoint(const std::string& dir, const std::string& run_dir,
                                            long step, bool keep_going) {
    if (!on()) return "";
    try {
        const auto err = capture([&] { save_window(dir); });
        throw_if_any_failed(mesh_.world(), err, "writing the averaging window into " + dir);
        return write_weights(run_dir, {{"format", "meshlm"}, {"step", std::to_string(step)}});
    } catch (const std::exception& e) {  // every rank alike: the writers' errors are collective
        if (!keep_going) throw;
        return std::string("warning: ") + e.what() +
               " (checkpoint.on_error=continue: training goes on; a resume from " + dir +
               " starts a new averaging window)\n";
    }
}

std::string WeightAverage::restore(const std::string& dir) {
    if (!on()) return "";
    const std::string path = average_window_file(dir, mesh_.data_index(), mesh_.model_index());
    std::deque<Snapshot> loaded;
    std::string why;  // why this rank cannot continue the saved window
    const auto err = capture([&] {
        if (!std::filesystem::exists(path)) {
            why = "it holds no averaging window for this mesh";
            return;
        }
        const SafetensorsFile f(path);
        for (const auto& [key, value] : window_identity(mesh_, begin_, count_)) {
            const auto it = f.metadata().find(key);
            if (it == f.metadata().end() || it->second != value) {
                why = "its averaging window was saved at another mesh";
                return;
            }
        }
        const auto found = f.metadata().find("steps");
        if (found == f.metadata().end()) MESHLM_INVALID(path, " has no 'steps' metadata");
        const Shape shape{static_cast<std::int64_t>(count_)};
        for (long s : parse_steps(found->second))
            loaded.push_back(
                {s, count_ > 0 ? f.f32(snapshot_name(s), &shape) : std::vector<float>()});
        // Windows saved before the CRC was kept have none to check.
        const auto saved = f.metadata().find("crc32");
        if (saved == f.metadata().end()) return;
        const std::string read = window_crc(loaded);
        if (read != saved->second)
            why = "its averaging window " + path + " fails its CRC-32 (saved " + saved->second +
                  ", read " + read + ")";
    });
    throw_if_any_failed(mesh_.world(), err, "");
    // Every rank continues the window, or none does.
    std::int32_t refused = !why.empty();
    mesh_.world().all_reduce_max(&refused, 1);
    if (refused) {
        window_.clear();
        return "note: " + dir + ": " + (why.empty() ? "another rank's window differs" : why) +
               "; train.average starts a new window\n";
    }
    while (static_cast<int>(loaded.size()) > last_) loaded.pop_front();  // a smaller `last`
    window_ = std::move(loaded);
    written_step_ = -1;
    return "";
}

std::string WeightAverage::write_weights(const std::string& run_dir,
                                         const std::map<std::string, std::string>& metadata) {
    if (!on() || window_.empty() ||
        (window_.back().step == written_step_ && metadata == written_meta_))
        return "";
    const std::string path = run_dir + "/model.avg.safetensors";
    const std::vector<float> avg = mean();
    if (mesh_.world().size() == 1)
        save_weights(path, learner_.full_layout(), avg.data(), metadata);
    else
        write_final_weights(mesh_, learner_.layout(), avg.data(), begin_, count_, model_, path,
                            metadata);
    written_step_ = window_.back().step, written_meta_ = metadata;
    return "saved " + path + " (the mean of the weights of steps " + join_steps(steps()) + ")\n";
}

}  // namespace meshlm
