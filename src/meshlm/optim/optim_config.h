// Optimizer and learning-rate schedule settings.
#pragma once

#include <string>

namespace meshlm {

struct OptimConfig {
    std::string name = "adamw";  // adamw | lion | adafactor
    float lr = 3e-3f;            // peak learning rate
    float end_lr = 3e-4f;        // learning rate at the end of the decay (cosine / linear / floor)
    int warmup_steps = 50;       // linear warmup from warmup_start * lr to lr
    float warmup_start = 0.f;    // fraction of lr the warmup starts from (0: lr / warmup_steps)
    std::string schedule = "cosine";  // cosine | linear | inverse_sqrt | constant
    int decay_steps = 0;  // step the decay ends at (warmup included), then flat; 0 = train.steps
    float weight_decay = 0.1f;
    // coupled: p -= lr_t * wd * p (AdamW's decoupled decay, scaled by the learning rate);
    // independent: p -= (lr_t / lr) * wd * p (seed 002's use_iwd: only the schedule scales it)
    std::string wd_mode = "coupled";
    // Which parameters decay: matrices (every 2-D weight, embeddings included) | all | none
    std::string decay_mask = "matrices";
    float beta1 = 0.9f;
    float beta2 = 0.95f;
    float eps = 1e-8f;
    float grad_clip = 1.0f;          // the clipping threshold; 0 disables clipping
    std::string clip_mode = "norm";  // norm: global L2 norm <= grad_clip; value: |g_i| <= grad_clip
    std::string mup_rule = "sp";     // per-tensor learning rates: sp | mup | abs_mup (mup_rule.h)
    bool mup_eps_scaling = false;    // Adam's eps scaled like the tensor's learning rate
    // Adafactor, named and defaulted as optax.adafactor's arguments (seed 001 sets only
    // multiply_by_parameter_scale and clipping_threshold, to these values); see adafactor_plan.h.
    float adafactor_decay_rate = 0.8f;  // second-moment decay 1 - t^-decay_rate at step t >= 1
    int adafactor_min_dim_size_to_factor = 128;  // factor a matrix whose smaller dim >= this
    bool adafactor_factored = true;              // false: a full second moment everywhere
    float adafactor_eps = 1e-30f;                // added to g^2
    float adafactor_clipping_threshold = 1.f;    // RMS of a tensor's update at most this; 0 off
    bool adafactor_multiply_by_parameter_scale = true;  // steps times max(RMS(tensor), 1e-3)
};

}  // namespace meshlm
