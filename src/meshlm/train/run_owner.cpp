#include "meshlm/train/run_owner.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <random>

#include "meshlm/core/error.h"
#include "meshlm/core/launch_command.h"
#include "meshlm/io/checkpoint.h"

namespace fs = std::filesystem;

namespace meshlm {
namespace {

// What `meshlm train` writes into a run directory (the tokenizer copy aside: a run directory
// made only of it is still free).
constexpr const char* kRunFiles[] = {"config.yaml",       "metrics.jsonl",
                                     "train.log",         "tb",
                                     "model.safetensors", "model.safetensors.index.json",
                                     "checkpoints"};

// The same directory, however it is spelled (relative, absolute, trailing slash, symlinks).
bool same_dir(const std::string& a, const std::string& b) {
    std::error_code ec;
    return fs::weakly_canonical(fs::absolute(a), ec) == fs::weakly_canonical(fs::absolute(b), ec);
}

// True when `inner` is `outer` or lies inside it.
bool nested(const std::string& inner, const std::string& outer) {
    std::error_code ec;
    const fs::path o = fs::weakly_canonical(fs::absolute(outer), ec);
    for (fs::path p = fs::weakly_canonical(fs::absolute(inner), ec); !p.empty();
         p = p.parent_path()) {
        if (p == o) return true;
        if (p == p.root_path()) break;
    }
    return false;
}

}  // namespace

bool holds_run(const std::string& dir) {
    std::error_code ec;
    for (const char* f : kRunFiles)
        if (fs::exists(fs::path(dir) / f, ec)) return true;
    return false;
}

bool holds_final_weights(const std::string& dir) {
    std::error_code ec;
    return fs::exists(fs::path(dir) / "model.safetensors", ec) ||
           fs::exists(fs::path(dir) / "model.safetensors.index.json", ec);
}

void check_run_dir_free(const std::string& dir, const std::string& init_from) {
    if (!init_from.empty()) {
        // The run the weights come from: a checkpoint's run directory, a file's directory
        // (when that is a run).
        std::string source = init_from;
        if (fs::exists(init_from + "/trainer.json"))
            source = checkpoint_run_dir(init_from);
        else if (fs::is_regular_file(init_from))
            source = fs::path(init_from).parent_path().string();
        if (holds_run(source) && nested(dir, source))
            MESHLM_INVALID("model.init_from=", init_from, " and the run directory ", dir,
                           " overlap; a warm start never writes into the run it starts from: set "
                           "--config.log.dir to a directory of its own (runs/<new name>)");
    }
    if (!holds_run(dir)) return;
    MESHLM_INVALID("the run directory ", dir,
                   " already holds a run; training into it would overwrite it. Continue that run "
                   "with `",
                   relaunch_command(1, "train --resume " + shell_quote(dir)),
                   "` (or --config.checkpoint.resume=auto), train a new one elsewhere with "
                   "--config.log.dir=runs/<new name>, or replace it with --force (removes the old "
                   "run first)");
}

void check_resume_target(const std::string& dir, const std::string& checkpoint,
                         const std::string& run_id) {
    if (same_dir(dir, checkpoint_run_dir(checkpoint)) || !holds_run(dir)) return;
    std::optional<std::string> latest;
    try {
        if (const auto l = latest_checkpoint(dir)) latest = *l;
    } catch (const InvalidInput&) {
    }
    if (!run_id.empty() && latest && checkpoint_run_id(*latest) == run_id) return;
    MESHLM_INVALID("log.dir=", dir, " already holds another run; resuming ", checkpoint,
                   " into it would mix the two. Resume into a new --config.log.dir, or without "
                   "--config.log.dir to continue in ",
                   checkpoint_run_dir(checkpoint));
}

void remove_run(const std::string& dir) {
    // Backwards: config.yaml (first) goes last, so a kill in between leaves the config that lets
    // checkpoint.resume=auto recognize the run and start it again.
    for (auto f = std::rbegin(kRunFiles); f != std::rend(kRunFiles); ++f)
        fs::remove_all(fs::path(dir) / *f);
}

std::string new_run_id() {
    std::random_device rd;
    const auto now =
        static_cast<std::uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
    const std::uint64_t id = (static_cast<std::uint64_t>(rd()) << 32 ^ rd()) ^ now;
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(id));
    return buf;
}

}  // namespace meshlm
