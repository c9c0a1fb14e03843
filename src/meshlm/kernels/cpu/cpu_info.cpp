// What this CPU backend runs with, for `meshlm --version`: the vector extensions the kernels
// were compiled for (-march), the one chosen at run time (native bf16 dot products, the same
// test gemm_bf16 dispatches on), and the oneDNN library linked.
#include <dnnl.h>

#include <string>

#include "meshlm/kernels/cpu/cpu_info.h"
#include "meshlm/kernels/kernels.h"

namespace meshlm::kernels {

std::string cpu_features_in_use() {
    std::string out;
    auto add = [&](const char* name) { out += (out.empty() ? "" : " ") + std::string(name); };
#ifdef __AVX512F__
    add("avx512f");
#endif
#ifdef __AVX512BW__
    add("avx512bw");
#endif
#ifdef __AVX512VL__
    add("avx512vl");
#endif
#ifdef __AVX2__
    add("avx2");
#endif
#ifdef __FMA__
    add("fma");
#endif
    if (native_bf16()) add("avx512bf16");  // detected at run time, not compiled in
    return out.empty() ? "none (scalar)" : out;
}

std::string onednn_version() {
    const dnnl_version_t* v = dnnl_version();
    // Distribution builds report the commit as "N/A".
    const std::string hash = v->hash ? v->hash : "";
    return std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
           std::to_string(v->patch) + (hash.empty() || hash == "N/A" ? "" : " (" + hash + ")");
}

}  // namespace meshlm::kernels
