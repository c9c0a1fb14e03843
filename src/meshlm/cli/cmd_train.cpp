// meshlm train [--config FILE] [--resume PATH] [--config.section.key=value ...]
#include <iostream>

#include "meshlm/cli/commands.h"
#include "meshlm/cli/config.h"
#include "meshlm/core/error.h"
#include "meshlm/infer/sampler.h"
#include "meshlm/train/checkpoint.h"
#include "meshlm/train/trainer.h"

namespace meshlm {

namespace {
struct TrainArgs {
    std::string config, resume;
};
}  // namespace

CommandRunner add_train_command(CLI::App& app, const std::vector<std::string>& overrides,
                                Comm& world) {
    auto* cmd = app.add_subcommand(
        "train", "Train a model (no arguments: the default small model on the fortunes corpus)");
    auto a = std::make_shared<TrainArgs>();
    cmd->add_option("--config", a->config, "YAML config file (defaults < file < --config.a.b=v)");
    cmd->add_option("--resume", a->resume,
                    "continue exactly from a checkpoint: a run directory (its latest checkpoint) "
                    "or a checkpoint directory; the config is the checkpoint's, changed only by "
                    "--config.a.b=v overrides");
    cmd->footer(
        "Override any key with --config.section.key=value, e.g. --config.train.steps=100.\n"
        "Keys:\n" +
        config_help());
    return [a, &overrides, &world] {
        const bool rank0 = world.rank() == 0;
        TrainJob job;
        Config cfg;
        if (!a->resume.empty()) {
            if (!a->config.empty())
                MESHLM_INVALID(
                    "--resume takes the config from the checkpoint; change settings "
                    "with --config.section.key=value instead of --config FILE");
            job.resume_from = resolve_checkpoint(a->resume);
            cfg = load_config(job.resume_from + "/config.yaml", overrides);
            // Without a log.dir override the run continues in its own directory.
            job.run_dir = cfg.log.dir.empty() ? checkpoint_run_dir(job.resume_from) : cfg.log.dir;
        } else {
            cfg = load_config(a->config, overrides);
            job.run_dir = cfg.log.dir.empty() ? "runs/" + cfg.name : cfg.log.dir;
            if (cfg.checkpoint.resume == "auto") {
                if (auto latest = latest_checkpoint(job.run_dir)) {
                    job.resume_from = *latest;
                    if (rank0)
                        std::cout << "checkpoint.resume=auto: continuing from " << *latest << "\n";
                }
            }
        }
        job.model = cfg.model;
        job.data = cfg.data;
        job.train = cfg.train;
        job.optim = cfg.optim;
        job.log = cfg.log;
        job.checkpoint = cfg.checkpoint;
        job.parallel = cfg.parallel;
        job.world = &world;
        job.resolved_yaml = config_to_yaml(cfg);
        if (cfg.log.sample_tokens > 0)
            job.on_finish = [&cfg](const float* params, const Tokenizer& tok) {
                SamplingOptions opt;
                opt.max_new_tokens = cfg.log.sample_tokens;
                opt.seed = cfg.train.seed;
                auto ids =
                    generate(cfg.model, params, tok.encode(cfg.log.sample_prompt), tok.eot_id(), opt);
                std::cout << "sample:\n" << cfg.log.sample_prompt << tok.decode(ids) << "\n";
            };
        TrainResult r = run_training(job, std::cout);
        if (r.interrupted && rank0)
            std::cout << "interrupted: the last checkpoint is " << r.last_checkpoint << "\n";
        return 0;
    };
}

}  // namespace meshlm
