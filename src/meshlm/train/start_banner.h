// What a run says before its first step: the model's size and training FLOPs per token, the
// planned memory, the data-parallel / tensor-parallel layout, the device, the threads and the
// peak MFU is measured against (probed on the CPU unless train.peak_gflops gives it), the
// precision, and on a CPU that widens bf16 what a bf16 GEMM costs there (timed).
//
// exports: MfuBasis, print_start_banner
#pragma once

#include <iosfwd>

#include "meshlm/model/linear.h"
#include "meshlm/train/learner.h"
#include "meshlm/train/train_meshes.h"
#include "meshlm/train/trainer.h"

namespace meshlm {

// What MFU is computed from.
struct MfuBasis {
    double flops_per_token = 0;  // training FLOPs (model/flops.h)
    double peak = 0;             // GFLOP/s per rank; 0 = unknown (a GPU without train.peak_gflops)
    bool peak_configured = false;  // train.peak_gflops gave it
    Precision precision = Precision::fp32;
};

// Prints the banner on `out` (rank 0's stream, or a silent one) and returns the MFU basis.
MfuBasis print_start_banner(const TrainJob& job, const Learner& learner, const TrainMeshes& meshes,
                            int threads, Precision precision, std::ostream& out);

}  // namespace meshlm
