// The PyTorch GPT-2 reference fixture (tests/fixtures/gpt2_tiny.safetensors, written by
// tools/reference/gpt2_reference.py): the model, optimizer and batch it was computed for, and
// its weights. gpt2_reference_test runs it on the CPU, cuda/cuda_reference_test on a GPU.
#pragma once

#include <algorithm>
#include <memory>
#include <string>

#include "meshlm/core/param_layout.h"
#include "meshlm/io/safetensors.h"
#include "meshlm/model/model_config.h"
#include "meshlm/optim/optim_config.h"
#include "test_util.h"

namespace meshlm::test {

struct Gpt2Fixture {
    std::unique_ptr<SafetensorsFile> file;
    ModelConfig model;
    OptimConfig optim;
    int B = 0, T = 0, steps = 0;

    // The fixture's weights into params, laid out by layout (transformer_layout of model).
    void load_params(const ParamLayout& layout, float* params) const {
        for (const auto& s : layout.slices()) {
            const auto v = file->f32("param." + s.name, &s.shape);
            std::copy(v.begin(), v.end(), params + s.offset);
        }
    }
};

inline Gpt2Fixture gpt2_fixture() {
    Gpt2Fixture f;
    f.file = std::make_unique<SafetensorsFile>(fixture("gpt2_tiny.safetensors"));
    const auto& md = f.file->metadata();
    auto i = [&](const char* k) { return std::stoi(md.at(k)); };
    auto x = [&](const char* k) { return std::stof(md.at(k)); };
    f.model.n_layer = i("n_layer");
    f.model.d_model = i("d_model");
    f.model.n_head = i("n_head");
    f.model.vocab_size = i("vocab_size");
    f.model.max_seq_len = i("max_seq_len");
    f.B = i("batch"), f.T = i("seq_len"), f.steps = i("steps");
    OptimConfig& o = f.optim;
    o.lr = x("lr"), o.end_lr = x("end_lr"), o.warmup_steps = i("warmup_steps");
    o.weight_decay = x("weight_decay"), o.beta1 = x("beta1"), o.beta2 = x("beta2");
    o.eps = x("eps"), o.grad_clip = x("grad_clip");
    o.schedule = "cosine", o.decay_mask = "matrices";
    return f;
}

}  // namespace meshlm::test
