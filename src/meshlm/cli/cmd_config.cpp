// meshlm config --list [--markdown]: every config key with its type, default, range and help,
// by section (docs/config.md is the --markdown output).
// meshlm config --dump [--config FILE] [--config.section.key=value ...]: the config that command
// line resolves to, as `meshlm train` would save it in RUN_DIR/config.yaml.
#include <iostream>

#include "meshlm/cli/commands.h"
#include "meshlm/cli/config_reference.h"
#include "meshlm/cli/run_config.h"
#include "meshlm/core/error.h"

namespace meshlm {

namespace {
struct ConfigArgs {
    bool list = false, markdown = false, dump = false;
    std::string config;
};
}  // namespace

CommandRunner add_config_command(CLI::App& app, const std::vector<std::string>& overrides) {
    auto* cmd = app.add_subcommand("config", "List every config key, or print a resolved config");
    auto a = std::make_shared<ConfigArgs>();
    auto* list = cmd->add_flag("--list", a->list,
                               "every key: type, default, range and help, grouped by section");
    cmd->add_flag("--markdown", a->markdown, "with --list: as Markdown (docs/config.md)")
        ->needs(list);
    auto* dump = cmd->add_flag("--dump", a->dump,
                               "the resolved config of --config FILE and --config.a.b=v "
                               "overrides, as `meshlm train` saves it")
                     ->excludes(list);
    cmd->add_option("--config", a->config,
                    "with --dump: YAML config file (default: configs/default.yaml, built in)")
        ->needs(dump);
    return [a, &overrides] {
        if (!a->list && !a->dump)
            MESHLM_INVALID("meshlm config needs --list (every key) or --dump (a resolved config)");
        if (a->list) {
            if (!overrides.empty())
                MESHLM_INVALID("meshlm config --list lists the defaults; --config.", overrides[0],
                               " applies to --dump");
            std::cout << (a->markdown ? config_reference_markdown() : config_reference_text());
            return 0;
        }
        std::cout << config_to_yaml(
            resolve_run_config(config_path_or_default(a->config), overrides));
        return 0;
    };
}

}  // namespace meshlm
