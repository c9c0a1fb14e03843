// meshlm eval --checkpoint RUN_DIR --split {val,test}: mean loss, perplexity and bits per byte
// of a run's final weights on a split of its prepared data (the seeds' validation / test modes).
#include <cstdio>

#include "meshlm/cli/commands.h"
#include "meshlm/cli/run_dir.h"
#include "meshlm/cli/validators.h"
#include "meshlm/core/error.h"
#include "meshlm/data/data_source.h"
#include "meshlm/data/loader.h"
#include "meshlm/data/prepare.h"
#include "meshlm/kernels/kernels.h"
#include "meshlm/train/evaluate.h"
#include "meshlm/train/trainer.h"

#include <iostream>

namespace meshlm {

namespace {
struct EvalArgs {
    std::string checkpoint, split = "val";
    int batch_size = 0, threads = 0, seq_len = 0;
};
}  // namespace

CommandRunner add_eval_command(CLI::App& app) {
    auto* cmd = app.add_subcommand("eval", "Loss, perplexity and bits per byte on a data split");
    auto a = std::make_shared<EvalArgs>();
    cmd->add_option("--checkpoint", a->checkpoint, "run directory written by `meshlm train`")
        ->required();
    cmd->add_option("--split", a->split, "split of the run's data")
        ->capture_default_str()
        ->check(CLI::IsMember({"val", "test", "train"}));
    cmd->add_option("--batch-size", a->batch_size, "rows per batch (0 = the run's batch size)")
        ->check(at_least(0));
    cmd->add_option("--seq-len", a->seq_len,
                    "tokens per row (0 = the run's train.seq_len); up to model.max_seq_len")
        ->check(at_least(0));
    cmd->add_option("--threads", a->threads, "threads (0 = all cores)")->capture_default_str();
    return [a] {
        RunDir run = open_run_dir(a->checkpoint);
        const Config& cfg = run.config;
        if (cfg.data.synthetic)
            MESHLM_INVALID(a->checkpoint,
                           " was trained on synthetic data: there is no split to "
                           "evaluate");
        kernels::set_threads(a->threads > 0 ? a->threads : available_cpus());
        DataConfig data = cfg.data;
        data.tokenizer = run.tokenizer_spec;
        const std::string dir = resolve_prepared_data(data, *run.tokenizer, std::cerr);
        PreparedMeta meta = read_prepared_meta(dir);
        if (meta.splits[a->split].tokens == 0)
            MESHLM_INVALID("the ", a->split, " split of ", dir,
                           " is empty (prepare with a non-zero --",
                           a->split == "test" ? "test" : "val", "-fraction)");
        const int B = a->batch_size > 0 ? a->batch_size : cfg.train.batch_size;
        const int T = a->seq_len > 0 ? a->seq_len : cfg.train.seq_len;
        if (T > cfg.model.max_seq_len)
            MESHLM_INVALID("--seq-len ", T, " exceeds the model's context model.max_seq_len = ",
                           cfg.model.max_seq_len,
                           cfg.model.position == "learned"
                               ? " (learned positions have no row beyond it)"
                               : " (raise it with --config.model.max_seq_len at training time)");
        LoaderOptions opt;
        opt.packing = parse_packing(cfg.data.packing);
        opt.seq_len = T;
        opt.shuffle = false;
        auto loader = DataLoader::open_split(dir, a->split, opt);
        Transformer model(cfg.model, B, T);
        Buffer<float> params(model.layout().total());
        load_run_weights(run, model.layout(), params.data());
        std::vector<std::int32_t> tokens(static_cast<std::size_t>(B) * T), targets(tokens.size());
        EvalResult r = evaluate(model, params.data(), *loader, B, T, 0,
                                token_byte_lengths(*run.tokenizer, cfg.model.vocab_size),
                                tokens.data(), targets.data());
        std::printf(
            "split %s: %llu tokens (%llu bytes) | loss %.6f nats/token | perplexity %.4f "
            "| %.6f bits/byte\n",
            a->split.c_str(), static_cast<unsigned long long>(r.tokens),
            static_cast<unsigned long long>(r.bytes), r.loss(), r.perplexity(), r.bits_per_byte());
        return 0;
    };
}

}  // namespace meshlm
