// The model against PyTorch autograd: logits, loss and every parameter gradient of a tiny
// GPT-2 at the fixture's weights, then 10 AdamW steps (clipping, schedule, decay mask).
// Fixture: tests/fixtures/gpt2_tiny.safetensors from tools/reference/gpt2_reference.py
// (computed in float64 and stored as float32).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "gpt2_fixture.h"
#include "meshlm/core/threads.h"
#include "meshlm/io/safetensors.h"
#include "meshlm/kernels/kernels.h"
#include "meshlm/train/learner.h"
#include "test_util.h"

namespace meshlm {
namespace {

class Gpt2Reference : public ::testing::Test {
  protected:
    void SetUp() override {
        set_thread_count(2);
        learner_ = std::make_unique<Learner>(model_, optim_, B_, T_, steps_);
        fx_.load_params(learner_->layout(), learner_->params());
    }

    test::Gpt2Fixture fx_ = test::gpt2_fixture();
    const ModelConfig& model_ = fx_.model;
    const OptimConfig& optim_ = fx_.optim;
    const int B_ = fx_.B, T_ = fx_.T, steps_ = fx_.steps;
    SafetensorsFile* file_ = fx_.file.get();
    std::unique_ptr<Learner> learner_;
};

TEST_F(Gpt2Reference, LogitsLossAndEveryGradientMatchPyTorch) {
    auto tokens = file_->i32("tokens"), targets = file_->i32("targets");
    Transformer& m = learner_->model();
    // Logits first (the loss pass overwrites them with dlogits).
    m.forward(learner_->params(), tokens.data(), nullptr, B_, T_);
    double logit_err = test::scaled_max_error(m.logits(), file_->f32("logits"));
    EXPECT_LT(logit_err, 1e-5) << "logits, error relative to max |logit|";

    const float grad_scale = 1.f / (B_ * T_);
    float loss = m.forward(learner_->params(), tokens.data(), targets.data(), B_, T_, grad_scale);
    float ref_loss = file_->f32("loss")[0];
    EXPECT_NEAR(loss, ref_loss, 1e-5 * std::fabs(ref_loss));

    std::fill(learner_->grads(), learner_->grads() + learner_->layout().total(), 0.f);
    m.backward(learner_->params(), learner_->grads());
    for (const auto& s : learner_->layout().slices()) {
        double err =
            test::scaled_max_error(learner_->grads() + s.offset, file_->f32("grad." + s.name));
        EXPECT_LT(err, 1e-4) << "gradient of " << s.name << " (error relative to its max)";
        std::printf("  grad %-26s max err / max |g| = %.2e\n", s.name.c_str(), err);
    }
}

TEST_F(Gpt2Reference, TenAdamWStepsMatchPyTorch) {
    auto tokens = file_->i32("step_tokens"), targets = file_->i32("step_targets");
    auto losses = file_->f32("step_losses"), lrs = file_->f32("step_lrs"),
         norms = file_->f32("step_grad_norms");
    const std::size_t per = static_cast<std::size_t>(B_) * T_;
    for (int s = 0; s < steps_; ++s) {
        StepStats st = learner_->train_step(tokens.data() + s * per, targets.data() + s * per, 1);
        EXPECT_NEAR(st.loss, losses[s], 1e-5 * std::fabs(losses[s])) << "step " << s;
        EXPECT_NEAR(st.lr, lrs[s], 1e-6 * lrs[s]) << "step " << s;
        EXPECT_NEAR(st.grad_norm, norms[s], 1e-5 * norms[s]) << "step " << s;
    }
    for (const auto& sl : learner_->layout().slices()) {
        auto ref = file_->f32("final." + sl.name);
        double err = 0;
        for (std::size_t i = 0; i < ref.size(); ++i)
            err = std::max(err, std::fabs(double(learner_->params()[sl.offset + i]) - ref[i]));
        // Key biases included: their gradient, exactly zero, is zeroed (model/key_bias.h).
        EXPECT_LT(err, 2e-5) << "final " << sl.name << " (max abs error)";
    }
}

}  // namespace
}  // namespace meshlm
