// meshlm train [--config FILE] [--resume PATH] [--config.section.key=value ...]
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>

#include "meshlm/cli/commands.h"
#include "meshlm/cli/config.h"
#include "meshlm/cli/model_match.h"
#include "meshlm/cli/overrides.h"
#include "meshlm/cli/run_config.h"
#include "meshlm/cli/schedule_notes.h"
#include "meshlm/core/error.h"
#include "meshlm/data/data_source.h"
#include "meshlm/infer/sampler.h"
#include "meshlm/io/checkpoint.h"
#include "meshlm/io/init_from.h"
#include "meshlm/train/all_ranks.h"
#include "meshlm/train/run_log.h"
#include "meshlm/train/run_owner.h"
#include "meshlm/train/trainer.h"

namespace meshlm {

namespace {
struct TrainArgs {
    std::string config, resume;
    bool force = false;
};

// The keys that overrides set.
std::vector<std::string> keys_of(const std::vector<std::string>& overrides) {
    std::vector<std::string> keys;
    for (const auto& o : overrides) keys.push_back(o.substr(0, o.find('=')));
    return keys;
}

// A run takes the layout of whatever launch it is given: `mpirun -np N` without parallel.* is data
// parallelism over N ranks, and a checkpoint resumes on any launch. The (data, model) layout
// comes from the number of ranks and the parallel.* keys in `given` (those the command line or
// its config file set; a checkpoint's saved values are not given). Without them the tensor-
// parallel degree is kept when it divides the ranks (so the same launch continues exactly),
// else the model is not split.
void layout_from_launch(Config& cfg, const std::vector<std::string>& given, int ranks) {
    auto is_given = [&](const char* key) {
        return std::find(given.begin(), given.end(), key) != given.end();
    };
    const bool data_set = is_given("parallel.data"), model_set = is_given("parallel.model");
    auto& p = cfg.parallel;
    if (!data_set && !model_set) {
        if (ranks % p.model != 0) p.model = 1;
        p.data = ranks / p.model;
    } else if (model_set && !data_set && ranks % p.model == 0) {
        p.data = ranks / p.model;
    } else if (data_set && !model_set && ranks % p.data == 0) {
        p.model = ranks / p.data;
    }
    check_model_parallel(cfg.model, p.model);
}

// A fresh run's model against what model.init_from loads.
void check_init_source(const Config& cfg) {
    const std::string& from = cfg.model.init_from;
    if (!cfg.model.init_from_layers.empty())  // the map's indices against the source's depth
        parse_layer_map(cfg.model.init_from_layers, cfg.model.n_layer, init_source_layers(from));
    const auto source = init_from_config(from);
    if (!source) return;  // a .safetensors file: its tensors are checked as they are read
    const ModelConfig& m = source->model;
    const bool hf = std::filesystem::exists(from + "/config.json");
    std::ostringstream what;
    what << "model.init_from=" << from << (hf ? " (a Hugging Face GPT-2" : "");
    if (hf)
        what << " that has n_layer " << m.n_layer << ", d_model " << m.d_model << ", n_head "
             << m.n_head << ", vocab_size " << m.vocab_size << ", max_seq_len " << m.max_seq_len
             << ")";
    Config same_depth = cfg;
    same_depth.model.n_layer = m.n_layer;
    if (cfg.model.init_from_layers.empty() && m.n_layer < cfg.model.n_layer && !hf &&
        model_changes(*source, same_depth).empty())
        MESHLM_INVALID("model.init_from=", from, " has ", m.n_layer,
                       " blocks and model.n_layer is ", cfg.model.n_layer,
                       ": keep model.n_layer=", m.n_layer,
                       ", or grow the depth by mapping blocks with model.init_from_layers (e.g. \"",
                       m.n_layer == 2 ? "0,0,1,1" : "0,0,1,1,...", "\")");
    // Depth up-scaling changes only the depth; every other model key must match.
    require_same_model(*source, cfg.model.init_from_layers.empty() ? cfg : same_depth, what.str());
}

// checkpoint.resume=auto with no checkpoint in `dir`: true when the run there is this one (the
// same model and optimizer as its config.yaml), stopped before its first checkpoint and without
// final weights, so that it starts again in place of being refused; false for a directory
// holding no run. A different run, a finished one, or run files without a config are refused.
bool same_run_without_checkpoint(const Config& cfg, const std::string& dir) {
    if (!holds_run(dir)) return false;
    if (holds_final_weights(dir))
        MESHLM_INVALID("checkpoint.resume=auto: ", dir,
                       " holds a finished run (its final weights) and no checkpoint to continue "
                       "from; train a new run elsewhere with --config.log.dir=runs/<new name>, or "
                       "replace it with --force");
    if (!std::filesystem::exists(dir + "/config.yaml"))
        MESHLM_INVALID("checkpoint.resume=auto: ", dir,
                       " holds run files but neither a checkpoint nor the config.yaml that would "
                       "say which run they belong to; train elsewhere with "
                       "--config.log.dir=runs/<new name>, or replace them with --force");
    const Config saved = load_config(dir + "/config.yaml", {});
    const std::string what = "the run in " + dir + " (stopped before its first checkpoint)";
    try {
        require_same_model(saved, cfg, what);
        require_same_optimizer(saved, cfg, what);
    } catch (const InvalidInput& e) {
        throw InvalidInput(std::string(e.what()) + "\n(" + dir +
                           " has no checkpoint yet: --force replaces that run with this one)");
    }
    return true;
}

// checkpoint.resume=auto on a command line without --resume: continues the latest checkpoint
// of job.run_dir, or with none sets job.restart_run when the run there is this one stopped
// before its first checkpoint (a preempted job requeued with the same command). Rank 0 decides
// the restart and tells every rank, so that all of them take the same way.
void resolve_auto_resume(Config& cfg, TrainJob& job, const TrainArgs& a,
                         const std::vector<std::string>& given, Comm& world) {
    if (const auto latest = latest_checkpoint(job.run_dir)) {
        if (a.force)
            MESHLM_INVALID("--force replaces a run; checkpoint.resume=auto continues ", job.run_dir,
                           ": give one of them");
        job.resume_from = *latest;
        const Config saved = load_config(*latest + "/config.yaml", {});
        require_same_model(saved, cfg, "the checkpoint " + *latest);
        require_same_optimizer(saved, cfg, "the checkpoint " + *latest);
        layout_from_launch(cfg, given, world.size());
        if (world.rank() == 0)
            std::cout << "checkpoint.resume=auto: continuing from " << *latest << "\n"
                      << schedule_notes(&saved, cfg);
        return;
    }
    if (a.force) return;  // --force replaces whatever the directory holds
    std::int32_t restart = 0;
    std::optional<std::string> refused;
    if (world.rank() == 0)
        refused = capture([&] { restart = same_run_without_checkpoint(cfg, job.run_dir); });
    throw_if_any_failed(world, refused, "");
    world.broadcast(&restart, 1, 0);
    job.restart_run = restart != 0;
}

// `meshlm train` once its flags are parsed; `log` (rank 0) becomes RUN_DIR/train.log.
int train_command(const TrainArgs& a, const std::vector<std::string>& overrides, Comm& world,
                  RunLog* log) {
    const bool rank0 = world.rank() == 0;
    TrainJob job;
    Config cfg;
    if (!a.resume.empty()) {
        if (!a.config.empty())
            MESHLM_INVALID(
                "--resume takes the config from the checkpoint; change settings "
                "with --config.section.key=value instead of --config FILE");
        if (a.force)
            MESHLM_INVALID("--force replaces a run; --resume continues one: give one of them");
        job.resume_from = resolve_checkpoint(a.resume);
        const Config saved = load_config(job.resume_from + "/config.yaml", {});
        cfg = load_config(job.resume_from + "/config.yaml", overrides);
        require_same_model(saved, cfg, "the checkpoint " + job.resume_from);
        require_same_optimizer(saved, cfg, "the checkpoint " + job.resume_from);
        layout_from_launch(cfg, keys_of(overrides), world.size());
        make_paths_absolute(cfg);
        if (rank0) std::cout << schedule_notes(&saved, cfg);
        // The run continues in the directory holding the checkpoint (wherever it was copied
        // or moved to), unless this command line names another.
        job.run_dir = overridden(overrides, "log.dir") && !cfg.log.dir.empty()
                          ? cfg.log.dir
                          : checkpoint_run_dir(job.resume_from);
    } else {
        std::vector<std::string> given;
        cfg = resolve_run_config(config_path_or_default(a.config), overrides, &given);
        job.run_dir = cfg.log.dir;
        if (cfg.checkpoint.resume == "auto") resolve_auto_resume(cfg, job, a, given, world);
        if (job.resume_from.empty()) {
            layout_from_launch(cfg, given, world.size());
            if (!cfg.model.init_from.empty()) check_init_source(cfg);
            if (rank0) std::cout << schedule_notes(nullptr, cfg);
        }
    }
    job.replace_run = a.force || job.restart_run;
    cfg.log.dir = job.run_dir;  // the config records where the run lives
    job.model = cfg.model;
    job.data = cfg.data;
    job.train = cfg.train;
    job.optim = cfg.optim;
    job.log = cfg.log;
    job.checkpoint = cfg.checkpoint;
    job.parallel = cfg.parallel;
    job.world = &world;
    job.resolved_yaml = config_to_yaml(cfg);
    Config shown = cfg;
    shown.data.cache_dir = data_cache_root(cfg.data);
    job.resolved_summary = config_summary(shown);
    if (cfg.log.sample_tokens > 0)
        job.on_finish = [&cfg](const float* params, const Tokenizer& tok) {
            SamplingOptions opt;
            opt.max_new_tokens = cfg.log.sample_tokens;
            opt.seed = cfg.train.seed;
            auto ids =
                generate(cfg.model, params, tok.encode(cfg.log.sample_prompt), tok.eot_id(), opt);
            return cfg.log.sample_prompt + tok.decode(ids);
        };
    if (log)
        job.on_run_dir = [log](const std::string& dir, bool resumed) {
            log->open(dir + "/train.log", resumed);
        };
    TrainResult r = run_training(job, std::cout);
    if (r.interrupted && rank0)
        std::cout << "interrupted: the last checkpoint is " << r.last_checkpoint << "\n";
    return 0;  // a clean stop on a signal too: the run is saved and resumes
}

}  // namespace

CommandRunner add_train_command(CLI::App& app, const std::vector<std::string>& overrides,
                                Comm& world) {
    auto* cmd = app.add_subcommand(
        "train", "Train a model (no arguments: the default small model on the fortunes corpus)");
    auto a = std::make_shared<TrainArgs>();
    cmd->add_option(
        "--config", a->config,
        "YAML config file; without one, the default run's recipe (configs/default.yaml, "
        "built in) (option defaults < file < --config.a.b=v)");
    cmd->add_option("--resume", a->resume,
                    "continue exactly from a checkpoint: a run directory (its latest checkpoint) "
                    "or a checkpoint directory; the config is the checkpoint's, changed only by "
                    "--config.a.b=v overrides; the run continues in the directory holding it");
    cmd->add_flag("--force", a->force,
                  "replace the run the run directory already holds (it is removed first)");
    cmd->footer(
        "Override any key with --config.section.key=value, e.g. --config.train.steps=100.\n"
        "Keys:\n" +
        config_help());
    return [a, &overrides, &world] {
        const bool rank0 = world.rank() == 0;
        // RUN_DIR/train.log: the console from here on, once the run directory exists.
        std::optional<RunLog> log;
        if (rank0) log.emplace();
        try {
            return train_command(*a, overrides, world, log ? &*log : nullptr);
        } catch (const std::exception& e) {
            if (log) log->note(std::string("error: ") + e.what());  // main prints it
            throw;
        }
    };
}

}  // namespace meshlm
