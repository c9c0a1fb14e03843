// The device switch of the view ops (CTranslate2's dispatch.h): each op checks its views, calls
// require_device() and then the CPU kernel or, through MESHLM_ON_CUDA, the CUDA one. A CPU-only
// build compiles the CUDA call away (its kernels do not exist there); require_device() has
// already thrown the error that names -DMESHLM_CUDA=ON.
#pragma once

#include "meshlm/kernels/device.h"

#ifdef MESHLM_HAVE_CUDA
#include "meshlm/core/trace.h"
#include "meshlm/kernels/cuda/cuda_kernels.h"
// Each CUDA op is a trace event named for the op (log.profile_steps). While tracing, the op
// waits for its kernels, so the event times the GPU's work, not the launch; outside the trace
// window nothing waits.
#define MESHLM_ON_CUDA(op, ...)                                                \
    do {                                                                       \
        ::meshlm::TraceScope meshlm_op_scope_(op);                             \
        __VA_ARGS__;                                                           \
        if (::meshlm::trace_enabled()) ::meshlm::kernels::cuda::synchronize(); \
    } while (0)
#else
#define MESHLM_ON_CUDA(op, ...) ::meshlm::kernels::require_device(::meshlm::Device::cuda, op)
#endif
