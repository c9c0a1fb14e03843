// The `meshlm` subcommands. Each registers its flags on a CLI11 subcommand and runs when
// selected; config overrides (--config.section.key=value) were already split off argv.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

namespace meshlm {

using CommandRunner = std::function<int()>;

CommandRunner add_train_command(CLI::App& app, const std::vector<std::string>& overrides);
CommandRunner add_sample_command(CLI::App& app);
CommandRunner add_eval_command(CLI::App& app);
CommandRunner add_prepare_command(CLI::App& app);
CommandRunner add_info_command(CLI::App& app, const std::vector<std::string>& overrides);
CommandRunner add_tokenize_command(CLI::App& app);
CommandRunner add_train_tokenizer_command(CLI::App& app);
CommandRunner add_convert_command(CLI::App& app);

}  // namespace meshlm
