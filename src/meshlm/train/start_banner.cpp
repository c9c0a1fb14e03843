#include "meshlm/train/start_banner.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <ostream>
#include <utility>
#include <vector>

#include "meshlm/kernels/ops/bf16.h"
#include "meshlm/kernels/ops/gemm.h"
#include "meshlm/kernels/ops/machine.h"
#include "meshlm/model/flops.h"
#include "meshlm/parallel/zero_plan.h"
#include "meshlm/train/progress.h"

namespace meshlm {
namespace {

// The peak for MFU: the best of a few short probes, of the FMA (fp32) or of the bf16 dot
// product (bf16 where the CPU has it; widened bf16 GEMMs run at the fp32 rate, so they get the
// FMA peak). One probe reads low whenever something else runs on the same cores for a moment
// (117 to 233 GFLOP/s were seen on the same two threads); the best of several is the machine's
// peak far more often.
double robust_peak_gflops(int threads, bool bf16_dot) {
    double best = 0;
    for (int i = 0; i < 5; ++i)
        best = std::max(best, bf16_dot ? ops::measure_peak_bf16_gflops(threads, 0.05)
                                       : ops::measure_peak_gflops(threads, 0.05));
    return best;
}

// Seconds per call of a GEMM of the block's shapes in fp32 and with bf16 operands (best of a
// few): what bf16 costs on a CPU that has to widen its operands.
std::pair<double, double> gemm_seconds_fp32_bf16(int rows, int width) {
    const std::size_t n = static_cast<std::size_t>(rows) * width, w = std::size_t(width) * width;
    std::vector<float> a(n, 0.5f), b(w, 0.25f), c(n);
    std::vector<std::uint16_t> a16(n), b16(w);
    const Device cpu = Device::cpu;
    const Tensor av = view(a.data(), {rows, width}, cpu), bv = view(b.data(), {width, width}, cpu);
    const Tensor a16v = view(a16.data(), av.shape, cpu), b16v = view(b16.data(), bv.shape, cpu);
    const Tensor cv = view(c.data(), av.shape, cpu);
    auto best = [](auto&& f) {
        double t = 1e30;
        for (int i = 0; i < 4; ++i) {
            const auto t0 = std::chrono::steady_clock::now();
            f();
            t = std::min(
                t, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        }
        return t;
    };
    const double fp32 = best([&] { ops::gemm(cv, av, false, bv, true, 1.f, 0.f); });
    const double bf16 = best([&] {
        ops::to_bf16(a16v, av);
        ops::to_bf16(b16v, bv);
        ops::gemm(cv, a16v, false, b16v, true, 1.f, 0.f);
    });
    return {fp32, bf16};
}

// The model's size and the memory planned per rank.
void print_model_lines(const TrainJob& job, const Learner& learner, double flops_per_token,
                       int ranks, std::ostream& out) {
    out << "model: " << human_count(static_cast<double>(learner.full_layout().count()))
        << " parameters ("
        << human_count(static_cast<double>(nonembedding_params(learner.full_layout())))
        << " non-embedding), " << human_count(flops_per_token) << " training FLOPs/token\n"
        << "memory" << (ranks > 1 ? " per rank" : "") << ": parameters "
        << human_bytes(learner.param_bytes()) << ", gradients " << human_bytes(learner.grad_bytes())
        << ", optimizer " << human_bytes(learner.optimizer_bytes()) << ", activations "
        << human_bytes(learner.activation_bytes());
    if (job.train.recompute != "none") out << " (recompute: " << job.train.recompute << ")";
    if (learner.working_bytes() > 0)
        out << ", " << zero_working_label(learner.plan()) << " "
            << human_bytes(learner.working_bytes());
    out << "\n";
}

// The layout over ranks and the device.
void print_layout_lines(const TrainJob& job, const Learner& learner, const TrainMeshes& meshes,
                        std::ostream& out) {
    const DeviceMesh& mesh = meshes.host();
    const int W = mesh.data_size(), M = mesh.model_size();
    if (M > 1)
        out << "tensor parallel: " << M << " model ranks per replica, " << W
            << " replicas; each rank holds " << learner.layout().count() << " of "
            << learner.full_layout().count() << " parameters\n";
    if (meshes.world().size() > 1) {
        // Exact bytes, for tests and for comparing with `meshlm info`.
        out << "data parallel: " << W << " ranks, ZeRO stage " << job.parallel.zero_stage
            << ", micro-batch " << job.train.batch_size << " x accum " << job.train.grad_accum
            << " x " << W << " ranks per step; allocated per rank (bytes): params "
            << learner.param_bytes() << " grads " << learner.grad_bytes() << " optimizer "
            << learner.optimizer_bytes() << " working " << learner.working_bytes() << "\n";
    }
    if (meshes.device() != Device::cpu)
        out << "device: " << kernels::device_name(meshes.device()) << " (GPU "
            << meshes.world().rank() % kernels::cuda_device_count() << " of "
            << kernels::cuda_device_count() << " visible"
            << (meshes.nccl() ? ", one per rank; collectives over NCCL" : "")
            << "); parameters, gradients, optimizer state and activations in GPU memory\n";
}

// The threads, the peak MFU is measured against, and the precision (with what bf16 costs on a
// CPU that widens it).
void print_compute_lines(const TrainJob& job, int threads, const MfuBasis& mfu, bool gpu,
                         std::ostream& out) {
    const bool bf16 = mfu.precision == Precision::bf16, bf16_dot = bf16 && ops::native_bf16();
    out << "threads: " << threads << ", " << precision_name(mfu.precision) << " peak "
        << static_cast<int>(mfu.peak) << " GFLOP/s"
        << (mfu.peak_configured ? " (train.peak_gflops)"
            : gpu               ? " (unknown for this GPU: set train.peak_gflops for MFU)"
            : bf16_dot          ? " (measured: best of 5 bf16 dot-product probes)"
            : bf16 ? " (measured: best of 5 FMA probes; widened bf16 GEMMs run at the fp32 rate)"
                   : " (measured: best of 5 FMA probes)")
        << "\n"
        << "precision: " << precision_name(mfu.precision)
        << (bf16 ? " GEMMs (bf16 operands, fp32 sums); fp32 master weights, gradients, optimizer "
                   "state, norms, softmax and loss"
                 : "")
        << (job.train.precision == "auto" ? " (train.precision: auto)" : "") << "\n";
    if (bf16 && !ops::native_bf16() && !gpu) {
        const int d = job.model.d_model;
        const auto [fp32_s, bf16_s] = gemm_seconds_fp32_bf16(1024, d);
        out << "note: this CPU has no native bf16 dot products (avx512_bf16), so bf16 GEMM "
               "operands are widened to fp32: a "
            << 1024 << " x " << d << " x " << d << " GEMM takes "
            << static_cast<int>(100 * bf16_s / fp32_s)
            << " % of its fp32 time here, so steps run no faster than fp32 (train.precision: "
               "fp32 is the faster choice on this CPU)\n";
    }
}

}  // namespace

MfuBasis print_start_banner(const TrainJob& job, const Learner& learner, const TrainMeshes& meshes,
                            int threads, Precision precision, std::ostream& out) {
    const bool gpu = meshes.device() != Device::cpu;
    MfuBasis mfu;
    mfu.precision = precision;
    mfu.flops_per_token =
        train_flops_per_token(job.model, learner.full_layout(), job.train.seq_len);
    mfu.peak_configured = job.train.peak_gflops > 0;
    // On a GPU the CPU's probes say nothing: MFU only against train.peak_gflops there.
    const bool bf16_dot = precision == Precision::bf16 && ops::native_bf16();
    mfu.peak = mfu.peak_configured ? job.train.peak_gflops
               : gpu               ? 0.0
                                   : robust_peak_gflops(threads, bf16_dot);
    print_model_lines(job, learner, mfu.flops_per_token, meshes.world().size(), out);
    print_layout_lines(job, learner, meshes, out);
    print_compute_lines(job, threads, mfu, gpu, out);
    return mfu;
}

}  // namespace meshlm
