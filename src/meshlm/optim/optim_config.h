// Optimizer and learning-rate schedule settings.
#pragma once

#include <string>

namespace meshlm {

struct OptimConfig {
    float lr = 3e-3f;                 // peak learning rate
    float end_lr = 3e-4f;             // learning rate at the last step (cosine / linear schedules)
    int warmup_steps = 50;            // linear warmup from lr/warmup to lr
    std::string schedule = "cosine";  // cosine | linear | constant
    float weight_decay = 0.1f;
    // Which parameters decay: matrices (every 2-D weight, embeddings included) | all | none
    std::string decay_mask = "matrices";
    float beta1 = 0.9f;
    float beta2 = 0.95f;
    float eps = 1e-8f;
    float grad_clip = 1.0f;  // max global gradient norm; 0 disables clipping
};

}  // namespace meshlm
