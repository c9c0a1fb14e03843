// The `meshlm` subcommands. Each registers its flags on a CLI11 subcommand and runs when
// selected; config overrides (--config.section.key=value) were already split off argv.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

#include "meshlm/parallel/comm.h"

namespace meshlm {

using CommandRunner = std::function<int()>;

// `overrides`: the command line's --config.section.key=value, as "section.key=value"; every
// command checks them (cli/overrides.h) and applies those it reads. They outlive the command.
// `world`: every rank of the job (a LocalComm for one process); it outlives the command.
CommandRunner add_train_command(CLI::App& app, const std::vector<std::string>& overrides,
                                Comm& world);
CommandRunner add_sample_command(CLI::App& app, const std::vector<std::string>& overrides);
CommandRunner add_eval_command(CLI::App& app, const std::vector<std::string>& overrides);
CommandRunner add_serve_command(CLI::App& app, const std::vector<std::string>& overrides);
CommandRunner add_prepare_command(CLI::App& app, const std::vector<std::string>& overrides);
CommandRunner add_info_command(CLI::App& app, const std::vector<std::string>& overrides);
CommandRunner add_tokenize_command(CLI::App& app, const std::vector<std::string>& overrides);
CommandRunner add_train_tokenizer_command(CLI::App& app, const std::vector<std::string>& overrides);
CommandRunner add_convert_command(CLI::App& app, const std::vector<std::string>& overrides);
CommandRunner add_reshard_command(CLI::App& app, const std::vector<std::string>& overrides);
CommandRunner add_config_command(CLI::App& app, const std::vector<std::string>& overrides);
CommandRunner add_plot_command(CLI::App& app, const std::vector<std::string>& overrides);
CommandRunner add_coord_check_command(CLI::App& app, const std::vector<std::string>& overrides,
                                      Comm& world);

}  // namespace meshlm
