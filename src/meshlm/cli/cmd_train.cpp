// meshlm train [--config FILE] [--config.section.key=value ...]
#include <iostream>

#include "meshlm/cli/commands.h"
#include "meshlm/cli/config.h"
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
        TrainJob job{
            cfg.model,          cfg.data, cfg.train,
            cfg.optim,          cfg.log,  cfg.log.dir.empty() ? "runs/" + cfg.name : cfg.log.dir,
            config_to_yaml(cfg)};
        run_training(job, std::cout);
        return 0;
    };
}

}  // namespace meshlm
