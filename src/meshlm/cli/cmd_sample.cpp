// meshlm sample --checkpoint RUN_DIR --prompt TEXT [sampling flags]
#include <iostream>

#include "meshlm/cli/commands.h"
#include "meshlm/cli/run_dir.h"
#include "meshlm/core/error.h"
#include "meshlm/data/tokenizer.h"
#include "meshlm/infer/sampler.h"
#include "meshlm/kernels/kernels.h"
#include "meshlm/train/trainer.h"

namespace meshlm {

namespace {
struct SampleArgs {
    std::string checkpoint, prompt;
    SamplingOptions opt;
    int threads = 0;
};
}  // namespace

CommandRunner add_sample_command(CLI::App& app) {
    auto* cmd = app.add_subcommand("sample", "Continue a prompt with a trained model");
    auto a = std::make_shared<SampleArgs>();
    a->opt.seed = 0;
    cmd->add_option("--checkpoint", a->checkpoint, "run directory written by `meshlm train`")
        ->required();
    cmd->add_option("--prompt", a->prompt, "text to continue (empty: start a new document)");
    cmd->add_option("--temperature", a->opt.temperature, "0 = greedy")
        ->capture_default_str()
        ->check(CLI::NonNegativeNumber);
    cmd->add_option("--top-k", a->opt.top_k, "keep the k most likely tokens (0 = all)")
        ->capture_default_str()
        ->check(CLI::NonNegativeNumber);
    cmd->add_option("--top-p", a->opt.top_p, "keep the smallest set with this probability mass")
        ->capture_default_str()
        ->check(CLI::Range(0.0f, 1.0f));
    cmd->add_option("--seed", a->opt.seed, "sampling seed")->capture_default_str();
    cmd->add_option("--max-new-tokens", a->opt.max_new_tokens, "tokens to generate")
        ->capture_default_str()
        ->check(CLI::NonNegativeNumber);
    cmd->add_option("--threads", a->threads, "threads (0 = all cores)")->capture_default_str();
    return [a] {
        if (a->opt.top_p <= 0.f) MESHLM_INVALID("--top-p must be in (0, 1]");
        RunDir run = open_run_dir(a->checkpoint);
        const Tokenizer* tok = run.tokenizer.get();
        kernels::set_threads(a->threads > 0 ? a->threads : available_cpus());
        GPT2 model(run.config.model, 1, run.config.model.max_seq_len);
        Buffer<float> params(model.layout().total());
        load_run_weights(run, model.layout(), params.data());
        std::cout << a->prompt << std::flush;
        generate(model, params.data(), tok->encode(a->prompt), tok->eot_id(), a->opt,
                 [&](std::int32_t id) { std::cout << tok->decode({id}) << std::flush; });
        std::cout << "\n";
        return 0;
    };
}

}  // namespace meshlm
