// The model on the GPU against PyTorch autograd: gpt2_reference_test's fixture (a tiny GPT-2's
// logits, loss, every parameter gradient and 10 AdamW steps, computed in float64 by
// tools/reference/gpt2_reference.py) with the Learner on cuda, at the CPU test's tolerances.
// Off its build machine, MESHLM_SOURCE_DIR names the checkout holding tests/fixtures. Skips
// without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "gpt2_fixture.h"
#include "meshlm/kernels/device.h"
#include "meshlm/kernels/device_buffer.h"
#include "meshlm/train/learner.h"
#include "test_util.h"

namespace meshlm {
namespace {

// n floats of device memory, in host memory.
std::vector<float> to_host(const float* at, std::size_t n) {
    std::vector<float> out(n);
    const auto len = static_cast<std::int64_t>(n);
    kernels::copy(view(out.data(), {len}, Device::cpu), view(at, {len}, Device::cuda));
    return out;
}

class CudaGpt2Reference : public ::testing::Test {
  protected:
    void SetUp() override {
        if (kernels::cuda_device_count() == 0)
            GTEST_SKIP() << "no GPU here: " << kernels::cuda_unavailable_reason();
        kernels::set_cuda_device(0);
        learner_ = std::make_unique<Learner>(model_, optim_, B_, T_, steps_, nullptr, 0, nullptr,
                                             Recompute::none, Precision::fp32, Device::cuda);
        fx_.load_params(learner_->layout(), learner_->full_params_buffer());
        learner_->full_params_written();
    }

    test::Gpt2Fixture fx_ = test::gpt2_fixture();
    const ModelConfig& model_ = fx_.model;
    const OptimConfig& optim_ = fx_.optim;
    const int B_ = fx_.B, T_ = fx_.T, steps_ = fx_.steps;
    SafetensorsFile* file_ = fx_.file.get();
    std::unique_ptr<Learner> learner_;
};

TEST_F(CudaGpt2Reference, LogitsLossAndEveryGradientMatchPyTorch) {
    auto tokens = file_->i32("tokens"), targets = file_->i32("targets");
    Transformer& m = learner_->model();
    const std::size_t n_logits = static_cast<std::size_t>(B_) * T_ * m.logits_stride();
    m.forward(learner_->params(), tokens.data(), nullptr, B_, T_);
    const double logit_err =
        test::scaled_max_error(to_host(m.logits(), n_logits).data(), file_->f32("logits"));
    EXPECT_LT(logit_err, 1e-5) << "logits, error relative to max |logit|";
    std::printf("[ reference] logits max err / max |logit| = %.2e\n", logit_err);

    const float loss = m.forward(learner_->params(), tokens.data(), targets.data(), B_, T_,
                                 1.f / static_cast<float>(B_ * T_));
    const float ref_loss = file_->f32("loss")[0];
    EXPECT_NEAR(loss, ref_loss, 1e-5 * std::fabs(ref_loss));
    std::printf("[ reference] loss %.7f, PyTorch %.7f\n", loss, ref_loss);

    const std::size_t total = learner_->layout().total();
    kernels::DeviceBuffer zeros(Device::cuda, DType::f32, {static_cast<std::int64_t>(total)});
    kernels::copy(flat(learner_->grads(), total, Device::cuda), zeros.view());
    m.backward(learner_->params(), learner_->grads());
    const std::vector<float> grads = to_host(learner_->grads(), total);
    double worst = 0;
    for (const auto& s : learner_->layout().slices()) {
        const double err =
            test::scaled_max_error(grads.data() + s.offset, file_->f32("grad." + s.name));
        EXPECT_LT(err, 1e-4) << "gradient of " << s.name << " (error relative to its max)";
        worst = std::max(worst, err);
    }
    std::printf("[ reference] gradients: worst max err / max |g| = %.2e\n", worst);
}

TEST_F(CudaGpt2Reference, TenAdamWStepsMatchPyTorch) {
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
    const float* final_params = learner_->full_params();
    double worst = 0;
    for (const auto& sl : learner_->layout().slices()) {
        auto ref = file_->f32("final." + sl.name);
        double err = 0;
        for (std::size_t i = 0; i < ref.size(); ++i)
            err = std::max(err, std::fabs(double(final_params[sl.offset + i]) - ref[i]));
        EXPECT_LT(err, 2e-5) << "final " << sl.name << " (max abs error)";
        worst = std::max(worst, err);
    }
    std::printf("[ reference] 10 AdamW steps: final weights max abs err %.2e\n", worst);
}

}  // namespace
}  // namespace meshlm
