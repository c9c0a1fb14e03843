// meshlm: train, sample and inspect GPT-family language models. Errors thrown anywhere below
// are caught here once, printed, and turned into a non-zero exit; under an MPI launcher a
// failing rank ends the whole job (parallel/failure.h).
#include <cstdio>
#include <iostream>
#include <memory>

#include "meshlm/cli/commands.h"
#include "meshlm/cli/config.h"
#include "meshlm/core/error.h"
#include "meshlm/core/signal_thread.h"
#include "meshlm/parallel/failure.h"
#include "meshlm/parallel/world.h"

int main(int argc, char** argv) {
    meshlm::start_signal_thread();  // before any other thread: they inherit its signal mask
    meshlm::MpiGuard mpi;           // MPI only when a launcher started us
    std::unique_ptr<meshlm::Comm> world;
    try {
        world = meshlm::make_world_comm(mpi);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
    try {
        meshlm::SplitArgs split = meshlm::split_config_overrides(argc, argv);
        CLI::App app{"meshlm: train, fine-tune, evaluate and serve transformer language models"};
        app.require_subcommand(1);
        app.set_version_flag("--version", MESHLM_VERSION);
        std::vector<std::pair<CLI::App*, meshlm::CommandRunner>> commands;
        auto add = [&](meshlm::CommandRunner run) {
            commands.emplace_back(app.get_subcommands({}).back(), std::move(run));
        };
        add(meshlm::add_train_command(app, split.overrides, *world));
        add(meshlm::add_sample_command(app));
        add(meshlm::add_eval_command(app));
        add(meshlm::add_prepare_command(app));
        add(meshlm::add_info_command(app, split.overrides));
        add(meshlm::add_tokenize_command(app));
        add(meshlm::add_train_tokenizer_command(app));
        add(meshlm::add_convert_command(app));
        add(meshlm::add_reshard_command(app));
        std::vector<const char*> args;
        for (const auto& a : split.args) args.push_back(a.c_str());
        try {
            app.parse(static_cast<int>(args.size()), args.data());
        } catch (const CLI::ParseError& e) {
            return app.exit(e);
        }
        for (auto& [sub, run] : commands)
            if (sub->parsed()) return run();
        return 1;
    } catch (const meshlm::InvalidInput& e) {
        // Bad inputs are usually every rank's alike: rank 0 reports them for all.
        return meshlm::fail_all_ranks(*world, e, 2, meshlm::FailureScope::maybe_every_rank);
    } catch (const std::exception& e) {
        return meshlm::fail_all_ranks(*world, e, 1);
    }
}
