// meshlm train [--config FILE] [--config.section.key=value ...]
#include <iostream>

#include "meshlm/cli/commands.h"
#include "meshlm/cli/config.h"
#include "meshlm/infer/sampler.h"
#include "meshlm/train/trainer.h"

namespace meshlm {

CommandRunner add_train_command(CLI::App& app, const std::vector<std::string>& overrides) {
    auto* cmd = app.add_subcommand(
        "train", "Train a model (no arguments: the default small model on the fortunes corpus)");
    auto path = std::make_shared<std::string>();
    cmd->add_option("--config", *path, "YAML config file (defaults < file < --config.a.b=v)");
    cmd->footer(
        "Override any key with --config.section.key=value, e.g. --config.train.steps=100.\n"
        "Keys:\n" +
        config_help());
    return [path, &overrides] {
        Config cfg = load_config(*path, overrides);
        TrainJob job;
        job.model = cfg.model;
        job.data = cfg.data;
        job.train = cfg.train;
        job.optim = cfg.optim;
        job.log = cfg.log;
        job.run_dir = cfg.log.dir.empty() ? "runs/" + cfg.name : cfg.log.dir;
        job.resolved_yaml = config_to_yaml(cfg);
        if (cfg.log.sample_tokens > 0)
            job.on_finish = [&cfg](const float* params, const Tokenizer& tok) {
                GPT2 model(cfg.model, 1, cfg.model.max_seq_len);
                SamplingOptions opt;
                opt.max_new_tokens = cfg.log.sample_tokens;
                opt.seed = cfg.train.seed;
                auto ids =
                    generate(model, params, tok.encode(cfg.log.sample_prompt), tok.eot_id(), opt);
                std::cout << "sample:\n" << cfg.log.sample_prompt << tok.decode(ids) << "\n";
            };
        run_training(job, std::cout);
        return 0;
    };
}

}  // namespace meshlm
