// meshlm: train, sample and inspect GPT-family language models. Errors thrown anywhere below
// are caught here once, printed, and turned into a non-zero exit; under an MPI launcher a
// failing rank ends the whole job (parallel/failure.h).
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>

#include "meshlm/cli/commands.h"
#include "meshlm/cli/config.h"
#include "meshlm/cli/suggest.h"
#include "meshlm/cli/version.h"
#include "meshlm/core/error.h"
#include "meshlm/core/omp_wait_policy.h"
#include "meshlm/core/signal_thread.h"
#include "meshlm/parallel/failure.h"
#include "meshlm/parallel/peer_watch.h"
#include "meshlm/parallel/world.h"

namespace {
// Exit codes (README "Exit codes"): 0 success, and a clean stop on SIGINT / SIGTERM (the run is
// saved); 1 a failure while running; 2 bad usage or input.
constexpr int kExitFailure = 1, kExitUsage = 2;
}  // namespace

int main(int argc, char** argv) {
    meshlm::apply_default_wait_policy(argv);  // may re-execute this binary once, so first
    meshlm::start_signal_thread();  // before any other thread: they inherit its signal mask
    meshlm::MpiGuard mpi;           // MPI only when a launcher started us
    std::unique_ptr<meshlm::Comm> world;
    std::unique_ptr<meshlm::PeerWatch> watch;  // ends this rank at once if another is lost
    try {
        world = meshlm::make_world_comm(mpi);
        watch = std::make_unique<meshlm::PeerWatch>(*world);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return kExitFailure;
    }
    try {
        meshlm::SplitArgs split = meshlm::split_config_overrides(argc, argv);
        CLI::App app{"meshlm: train, fine-tune, evaluate and serve transformer language models"};
        app.require_subcommand(1);
        app.set_version_flag("--version",
                             [] { return meshlm::version_text(meshlm::build_commit()); });
        std::vector<std::pair<CLI::App*, meshlm::CommandRunner>> commands;
        auto add = [&](meshlm::CommandRunner run) {
            commands.emplace_back(app.get_subcommands({}).back(), std::move(run));
        };
        add(meshlm::add_train_command(app, split.overrides, *world));
        add(meshlm::add_sample_command(app, split.overrides));
        add(meshlm::add_eval_command(app, split.overrides));
        add(meshlm::add_serve_command(app, split.overrides));
        add(meshlm::add_prepare_command(app, split.overrides));
        add(meshlm::add_info_command(app, split.overrides));
        add(meshlm::add_tokenize_command(app, split.overrides));
        add(meshlm::add_train_tokenizer_command(app, split.overrides));
        add(meshlm::add_convert_command(app, split.overrides));
        add(meshlm::add_reshard_command(app, split.overrides));
        add(meshlm::add_config_command(app, split.overrides));
        add(meshlm::add_coord_check_command(app, split.overrides, *world));
        add(meshlm::add_plot_command(app, split.overrides));
        // A mistyped command gets a suggestion, not CLI11's "A subcommand is required".
        if (split.args.size() > 1 && !split.args[1].starts_with("-")) {
            std::vector<std::string> names;
            for (const auto* sub : app.get_subcommands({})) names.push_back(sub->get_name());
            const std::string& word = split.args[1];
            if (std::find(names.begin(), names.end(), word) == names.end()) {
                const std::string best = meshlm::closest_word(word, names);
                std::string all;
                for (const auto& n : names) all += (all.empty() ? "" : ", ") + n;
                if (world->rank() == 0)
                    std::fprintf(
                        stderr, "error: unknown command '%s'; %s(commands: %s)\n", word.c_str(),
                        best.empty() ? "" : ("did you mean '" + best + "'? ").c_str(), all.c_str());
                return kExitUsage;
            }
        }
        std::vector<const char*> args;
        for (const auto& a : split.args) args.push_back(a.c_str());
        try {
            app.parse(static_cast<int>(args.size()), args.data());
        } catch (const CLI::ParseError& e) {
            // --help and --version exit 0; every other parse error is bad usage.
            return app.exit(e) == 0 ? 0 : kExitUsage;
        }
        for (auto& [sub, run] : commands)
            if (sub->parsed()) return run();
        return kExitUsage;
    } catch (const meshlm::InvalidInput& e) {
        // Bad inputs are usually every rank's alike: rank 0 reports them for all.
        return meshlm::fail_all_ranks(*world, e, kExitUsage,
                                      meshlm::FailureScope::maybe_every_rank);
    } catch (const std::exception& e) {
        return meshlm::fail_all_ranks(*world, e, kExitFailure);
    }
}
