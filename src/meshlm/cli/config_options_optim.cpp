// The `optim` section of the option table (config_table.h): one `.add(...)` per key, in the
// order `meshlm config --list`, the dump and the help show them.
#include "meshlm/cli/config_table.h"

namespace meshlm::config_detail {

void add_optim_options(OptionTable& t) {
    Section<OptimConfig>(t, "optim", &Config::optim)
        .add("name", &OptimConfig::name, "optimizer", one_of({"adamw", "lion", "adafactor"}))
        .add("lr", &OptimConfig::lr, "peak learning rate", greater_than(0))
        .add("end_lr", &OptimConfig::end_lr, "learning rate at the end of the decay", at_least(0))
        .add("warmup_steps", &OptimConfig::warmup_steps, "steps of linear warmup", at_least(0))
        .add("warmup_start", &OptimConfig::warmup_start,
             "fraction of lr the warmup starts from (0 = lr / warmup_steps at the first step)",
             in_closed_open(0, 1))
        .add("schedule", &OptimConfig::schedule, "learning-rate schedule after the warmup",
             one_of({"cosine", "linear", "inverse_sqrt", "constant"}))
        .add("decay_steps", &OptimConfig::decay_steps,
             "step the decay ends at (warmup included), flat after it; 0 = train.steps",
             at_least(0))
        .add("weight_decay", &OptimConfig::weight_decay, "weight decay", at_least(0))
        .add("wd_mode", &OptimConfig::wd_mode,
             "coupled: decay scaled by the learning rate; independent: by the schedule only",
             one_of({"coupled", "independent"}))
        .add("decay_mask", &OptimConfig::decay_mask,
             "which parameters decay (matrices = every 2-D weight, embeddings included)",
             one_of({"matrices", "all", "none"}))
        .add("beta1", &OptimConfig::beta1, "first-moment decay (Lion: interpolation of the update)",
             in_closed_open(0, 1))
        .add("beta2", &OptimConfig::beta2, "second-moment decay (Lion: momentum decay)",
             in_closed_open(0, 1))
        .add("eps", &OptimConfig::eps, "AdamW epsilon", greater_than(0))
        .add("grad_clip", &OptimConfig::grad_clip, "clipping threshold; 0 = no clipping",
             at_least(0))
        .add("clip_mode", &OptimConfig::clip_mode,
             "norm: global L2 norm <= grad_clip; value: every element in [-grad_clip, grad_clip]",
             one_of({"norm", "value"}))
        .add("mup_rule", &OptimConfig::mup_rule,
             "per-tensor learning rates: sp (all lr), mup (matrices lr * d_base / d_model), "
             "abs_mup (matrices lr / fan_in)",
             one_of({"sp", "mup", "abs_mup"}))
        .add("mup_eps_scaling", &OptimConfig::mup_eps_scaling,
             "scale Adam's eps like each tensor's learning rate")
        .add("adafactor_decay_rate", &OptimConfig::adafactor_decay_rate,
             "Adafactor: the second moments decay by 1 - t^-decay_rate at step t", greater_than(0))
        .add("adafactor_min_dim_size_to_factor", &OptimConfig::adafactor_min_dim_size_to_factor,
             "Adafactor: a matrix whose dims are both at least this keeps row and column "
             "statistics instead of a full second moment",
             at_least(1))
        .add("adafactor_factored", &OptimConfig::adafactor_factored,
             "Adafactor: factor the second moments of large matrices (false: full everywhere)")
        .add("adafactor_eps", &OptimConfig::adafactor_eps, "Adafactor: added to g^2",
             greater_than(0))
        .add("adafactor_clipping_threshold", &OptimConfig::adafactor_clipping_threshold,
             "Adafactor: each tensor's update is scaled down to this RMS at most; 0 = off",
             at_least(0))
        .add("adafactor_multiply_by_parameter_scale",
             &OptimConfig::adafactor_multiply_by_parameter_scale,
             "Adafactor: steps relative to each tensor's RMS (at least 1e-3); false: lr is the "
             "absolute step");
}

}  // namespace meshlm::config_detail
