// meshlm reshard --checkpoint IN --out OUT [--data D] [--model M] [--zero-stage S] [--force]
// meshlm reshard --checkpoint IN --out OUT --hf [--force]
//
// One process reads a checkpoint of any format and layout (a run directory means its latest
// checkpoint) and writes OUT as a run directory holding that checkpoint for (D, M, S): shard
// files when D x M > 1, the single-file format for 1 x 1, with the same trainer state, so
// `meshlm train --resume OUT` on D x M ranks continues exactly. The config follows: the
// parallel section is set, train.batch_size keeps the global batch, log.dir is cleared so the
// run continues in OUT. --hf writes the Hugging Face directory instead (as convert).
// OUT is built in a hidden sibling and renamed into place; an existing OUT needs --force.
#include <cstdio>
#include <filesystem>

#include "meshlm/cli/commands.h"
#include "meshlm/cli/config.h"
#include "meshlm/cli/hf_export.h"
#include "meshlm/cli/overrides.h"
#include "meshlm/cli/run_dir.h"
#include "meshlm/cli/staging_dir.h"
#include "meshlm/cli/validators.h"
#include "meshlm/core/atomic_file.h"
#include "meshlm/core/error.h"
#include "meshlm/core/launch_command.h"
#include "meshlm/io/checkpoint.h"
#include "meshlm/io/checkpoint_layout.h"
#include "meshlm/io/run_files.h"
#include "meshlm/io/shard_format.h"
#include "meshlm/model/transformer.h"
#include "meshlm/model/transformer_layout.h"
#include "meshlm/train/full_state.h"

namespace fs = std::filesystem;

namespace meshlm {

namespace {

struct ReshardArgs {
    std::string in, out;
    int data = 1, model = 1, zero_stage = -1;  // -1: the checkpoint's stage
    bool hf = false, force = false;
};

int reshard_to_hf(const ReshardArgs& a, const std::string& ckpt) {
    RunDir run = open_run_dir(ckpt);
    const ParamLayout layout = transformer_layout(run.config.model);
    std::vector<float> params(layout.total());
    load_run_weights(run, layout, params.data());
    StagingDir out(a.out, a.force, "reshard");
    std::string tok_note;
    const HfExport ex = export_hf_dir(out.path(), run, params.data(), HfExportOptions{}, tok_note);
    out.publish();
    std::printf("wrote %s as the Hugging Face %s directory %s (%zu weight file%s, f32); %s\n",
                ckpt.c_str(), ex.architecture.c_str(), out.final_path().c_str(), ex.files.size(),
                ex.files.size() == 1 ? "" : "s", tok_note.c_str());
    return 0;
}

int reshard(const ReshardArgs& a, const std::string& ckpt) {
    TrainerState st = read_checkpoint(ckpt);
    RunDir run = open_run_dir(ckpt);  // the config and the run's tokenizer copy
    Config cfg = run.config;
    const int stage = a.zero_stage >= 0 ? a.zero_stage : cfg.parallel.zero_stage;
    // Checks the layout first (model ranks dividing heads, MLP width and vocabulary; the stage).
    const ShardGeometry layout(cfg.model, a.data, a.model, stage);
    // The same global batch: train.batch_size is per data-parallel rank.
    const long rows = static_cast<long>(cfg.train.batch_size) * cfg.parallel.data;
    if (rows % a.data != 0)
        MESHLM_INVALID("the checkpoint's global batch of ", rows, " rows (train.batch_size ",
                       cfg.train.batch_size, " x data ", cfg.parallel.data,
                       ") does not split over --data ", a.data,
                       " ranks; an exact resume needs the same global batch");
    cfg.train.batch_size = static_cast<int>(rows / a.data);
    cfg.parallel.data = a.data, cfg.parallel.model = a.model, cfg.parallel.zero_stage = stage;
    cfg.log.dir.clear();  // a resume of OUT continues in OUT
    cfg.checkpoint.resume = "none";
    st.config_yaml = config_to_yaml(cfg);

    const FullTrainingState full = read_full_state(ckpt, cfg.model, cfg.optim);
    if (full.step != st.step)
        MESHLM_INVALID(ckpt, ": optimizer step ", full.step, " differs from trainer.json's step ",
                       st.step);
    StagingDir out(a.out, a.force, "reshard");
    write_file_atomic(out.path() + "/config.yaml", st.config_yaml);
    load_config(out.path() + "/config.yaml", {});  // what train --resume will read must load
    if (run.tokenizer_spec != "byte" && fs::is_regular_file(run.tokenizer_spec))
        fs::copy_file(run.tokenizer_spec, run_tokenizer_copy(out.path(), cfg.data.tokenizer));
    const std::string dir = write_checkpoint_for_layout(out.path(), st, cfg.model, full, a.data,
                                                        a.model, stage, cfg.checkpoint);
    out.publish();
    const int ranks = a.data * a.model;
    std::printf(
        "wrote step %ld of %s for data %d x model %d (ZeRO stage %d, train.batch_size %d) as %s "
        "(%s); resume with: %s\n",
        st.step, ckpt.c_str(), a.data, a.model, stage, cfg.train.batch_size,
        (out.final_path() + "/checkpoints/" + fs::path(dir).filename().string()).c_str(),
        ranks > 1 ? "sharded" : "single-file",
        relaunch_command(ranks, "train --resume " + shell_quote(out.final_path())).c_str());
    return 0;
}

}  // namespace

CommandRunner add_reshard_command(CLI::App& app, const std::vector<std::string>& overrides) {
    auto* cmd = app.add_subcommand(
        "reshard",
        "Rewrite a checkpoint for another (data, model, ZeRO) layout, or as Hugging Face");
    auto a = std::make_shared<ReshardArgs>();
    cmd->add_option("--checkpoint", a->in, "checkpoint directory, or a run directory (its latest)")
        ->required();
    cmd->add_option("--out", a->out, "run directory to create, holding the checkpoint")->required();
    auto* data = cmd->add_option("--data", a->data, "data-parallel ranks of the new layout")
                     ->capture_default_str()
                     ->check(positive());
    auto* model = cmd->add_option("--model", a->model, "tensor-parallel ranks of the new layout")
                      ->capture_default_str()
                      ->check(positive());
    auto* stage = cmd->add_option("--zero-stage", a->zero_stage,
                                  "ZeRO stage of the new layout (default: the checkpoint's)")
                      ->check(in_range(0, 3));
    cmd->add_flag("--hf", a->hf, "write the Hugging Face directory (single-file model) instead")
        ->excludes(data)
        ->excludes(model)
        ->excludes(stage);
    cmd->add_flag("--force", a->force, "replace a non-empty OUT");
    return [a, &overrides] {
        require_used_overrides(overrides, "meshlm reshard", {});  // the layout: --data, --model
        const std::string ckpt = resolve_checkpoint(a->in);
        return a->hf ? reshard_to_hf(*a, ckpt) : reshard(*a, ckpt);
    };
}

}  // namespace meshlm
