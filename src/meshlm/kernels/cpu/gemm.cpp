// GEMMs. fp32: oneDNN's dnnl_sgemm (row-major), picked after measuring OpenBLAS, BLIS and oneDNN
// on the GPT-2 training shapes (bench/gemm_libs.sh): oneDNN was fastest and steadiest.
// bf16 operands with fp32 accumulation (train.precision: bf16): where the CPU has AVX512-BF16 dot
// products, oneDNN's matmul primitive on the bf16 operands (about twice the fp32 FMA rate);
// elsewhere the operands are widened to fp32 (exactly) for the fp32 GEMM, so results agree up to
// summation order and only the speed differs.
// Both run on our OpenMP pool, single-threaded when called inside a parallel region.
#include <dnnl.h>

#include <dnnl.hpp>

#include <cstdlib>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "meshlm/core/error.h"
#include "meshlm/kernels/kernels.h"

namespace meshlm::kernels {
namespace {

thread_local int g_gemm_depth = 0;

// Counts the calling thread into gemm() while in scope (in_gemm()).
struct InGemm {
    InGemm() { ++g_gemm_depth; }
    ~InGemm() { --g_gemm_depth; }
};

using Key = std::tuple<bool, bool, int, int, int, int, int, int, float, float>;

struct Matmuls {
    std::mutex mu;
    dnnl::engine eng{dnnl::engine::kind::cpu, 0};
    dnnl::stream strm{eng};
    std::map<Key, dnnl::matmul> cache;  // one primitive per shape: built on first use
};

Matmuls& matmuls() {
    static Matmuls m;
    return m;
}

// op(X) of shape rows x cols stored row-major with row stride ld (transposed: cols x rows).
dnnl::memory::desc desc(dnnl::memory::data_type dt, int rows, int cols, int ld, bool trans) {
    const dnnl::memory::dims strides =
        trans ? dnnl::memory::dims{1, ld} : dnnl::memory::dims{ld, 1};
    return dnnl::memory::desc({rows, cols}, dt, strides);
}

// The fallback: widen both operands into per-thread scratch (grown once, then reused).
void gemm_widened(bool ta, bool tb, int M, int N, int K, float alpha, const std::uint16_t* A,
                  int lda, const std::uint16_t* B, int ldb, float beta, float* C, int ldc) {
    thread_local std::vector<float> a32, b32;
    const int ar = ta ? K : M, ac = ta ? M : K, br = tb ? N : K, bc = tb ? K : N;
    if (a32.size() < static_cast<std::size_t>(ar) * ac)
        a32.resize(static_cast<std::size_t>(ar) * ac);
    if (b32.size() < static_cast<std::size_t>(br) * bc)
        b32.resize(static_cast<std::size_t>(br) * bc);
    from_bf16_rows(a32.data(), A, ar, ac, lda);
    from_bf16_rows(b32.data(), B, br, bc, ldb);
    gemm(ta, tb, M, N, K, alpha, a32.data(), ac, b32.data(), bc, beta, C, ldc);
}

bool detect_native() {
    if (const char* off = std::getenv("MESHLM_NO_NATIVE_BF16"); off && *off && *off != '0')
        return false;
    return __builtin_cpu_supports("avx512bf16");
}

}  // namespace

bool in_gemm() {
    return g_gemm_depth > 0;
}

void gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
          const float* B, int ldb, float beta, float* C, int ldc) {
    if (lda == 0) lda = trans_a ? M : K;
    if (ldb == 0) ldb = trans_b ? K : N;
    if (ldc == 0) ldc = N;
    const InGemm scope;
    dnnl_status_t st = dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', M, N, K, alpha, A, lda,
                                  B, ldb, beta, C, ldc);
    MESHLM_CHECK(st == dnnl_success, "dnnl_sgemm failed with status ", static_cast<int>(st),
                 " for M=", M, " N=", N, " K=", K);
}

bool native_bf16() {
    static const bool native = detect_native();
    return native;
}

void gemm_bf16(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const std::uint16_t* A,
               int lda, const std::uint16_t* B, int ldb, float beta, float* C, int ldc) {
    if (lda == 0) lda = trans_a ? M : K;
    if (ldb == 0) ldb = trans_b ? K : N;
    if (ldc == 0) ldc = N;
    if (M == 0 || N == 0) return;
    const InGemm scope;
    if (!native_bf16())
        return gemm_widened(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    using dt = dnnl::memory::data_type;
    const auto a_md = desc(dt::bf16, M, K, lda, trans_a), b_md = desc(dt::bf16, K, N, ldb, trans_b);
    const auto c_md = dnnl::memory::desc({M, N}, dt::f32, dnnl::memory::dims{ldc, 1});
    Matmuls& mm = matmuls();
    const Key key{trans_a, trans_b, M, N, K, lda, ldb, ldc, alpha, beta};
    dnnl::matmul* prim;
    {
        std::lock_guard<std::mutex> lock(mm.mu);
        auto it = mm.cache.find(key);
        if (it == mm.cache.end()) {
            dnnl::primitive_attr attr;
            if (alpha != 1.f) attr.set_output_scales(0, {alpha});
            if (beta != 0.f) {
                dnnl::post_ops po;
                po.append_sum(beta);
                attr.set_post_ops(po);
            }
            try {
                const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, c_md), attr,
                                                      mm.eng);
                it = mm.cache.emplace(key, dnnl::matmul(pd)).first;
            } catch (const dnnl::error& e) {
                throw Error(detail::concat("bf16 matmul M=", M, " N=", N, " K=", K,
                                           ": oneDNN has no implementation (", e.what(), ")"));
            }
        }
        prim = &it->second;
    }
    // The memory objects wrap our pointers (no copies).
    dnnl::memory am(a_md, mm.eng, const_cast<std::uint16_t*>(A));
    dnnl::memory bm(b_md, mm.eng, const_cast<std::uint16_t*>(B));
    dnnl::memory cm(c_md, mm.eng, C);
    prim->execute(mm.strm, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
    mm.strm.wait();
}

}  // namespace meshlm::kernels
