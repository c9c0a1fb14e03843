// SGEMM throughput of one BLAS backend on the training shapes of GPT-2 small (--arch gpt2) or of
// the Llama-style SmolLM-135M shape bench/train_llama_small.sh trains (--arch llama: grouped
// key/value heads, SwiGLU, no biases).
//
// Built once per backend from this file (bench/CMakeLists.txt): gemm_openblas, gemm_blis,
// gemm_onednn, selected by GEMM_BACKEND_OPENBLAS / GEMM_BACKEND_BLIS / GEMM_BACKEND_ONEDNN.
// bench/gemm_libs.sh runs all three and prints the comparison table.
//
// Row-major, weights [out, in] (nn.Linear layout), N = B*T rows. For each linear layer:
//   fwd : Y[N,out]   = X[N,in]   . W[out,in]^T    (NoTrans, Trans)   beta = 1 (bias pre-filled)
//   dX  : dX[N,in]   = dY[N,out] . W[out,in]      (NoTrans, NoTrans) beta = 0
//   dW  : dW[out,in] += dY[N,out]^T . X[N,in]     (Trans,   NoTrans) beta = 1 (accumulate)
// exactly the calls src/meshlm/kernels/cpu/linear.cpp makes. The logits layer (tied wte, no
// bias) uses beta = 0 forward.
//
// Output: one JSON object per line (meta, check, result), consumed by gemm_libs.sh.
#include <omp.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#if defined(GEMM_BACKEND_OPENBLAS)
#include <cblas.h>
static const char* kLib = "openblas";
#elif defined(GEMM_BACKEND_BLIS)
#include <blis.h>
static const char* kLib = "blis";
#elif defined(GEMM_BACKEND_ONEDNN)
#include <oneapi/dnnl/dnnl.h>
static const char* kLib = "onednn";
#else
#error "define one of GEMM_BACKEND_OPENBLAS, GEMM_BACKEND_BLIS, GEMM_BACKEND_ONEDNN"
#endif

namespace {

// ---------------------------------------------------------------------------------------------
// Backend shims

void backend_set_threads(int n) {
    omp_set_num_threads(n);
#if defined(GEMM_BACKEND_OPENBLAS)
    openblas_set_num_threads(n);
#elif defined(GEMM_BACKEND_BLIS)
    // BLIS ignores omp_get_max_threads(): without this (or BLIS_NUM_THREADS) it is serial.
    bli_thread_set_num_threads(n);
#endif
    // oneDNN follows omp_get_max_threads().
}

std::string backend_info() {
    char buf[512];
#if defined(GEMM_BACKEND_OPENBLAS)
    std::snprintf(buf, sizeof buf, "core=%s; config=%s", openblas_get_corename(),
                  openblas_get_config());
#elif defined(GEMM_BACKEND_BLIS)
    std::snprintf(buf, sizeof buf, "version=%s; arch=%s; openmp=%d", bli_info_get_version_str(),
                  bli_arch_string(bli_arch_query_id()),
                  static_cast<int>(bli_info_get_enable_openmp()));
#elif defined(GEMM_BACKEND_ONEDNN)
    const dnnl_version_t* v = dnnl_version();
    const char* isa = "?";
    switch (dnnl_get_effective_cpu_isa()) {
        case dnnl_cpu_isa_sse41:
            isa = "sse41";
            break;
        case dnnl_cpu_isa_avx:
            isa = "avx";
            break;
        case dnnl_cpu_isa_avx2:
            isa = "avx2";
            break;
        case dnnl_cpu_isa_avx2_vnni:
            isa = "avx2_vnni";
            break;
        case dnnl_cpu_isa_avx512_core:
            isa = "avx512_core";
            break;
        case dnnl_cpu_isa_avx512_core_vnni:
            isa = "avx512_core_vnni";
            break;
        case dnnl_cpu_isa_avx512_core_bf16:
            isa = "avx512_core_bf16";
            break;
        case dnnl_cpu_isa_avx512_core_amx:
            isa = "avx512_core_amx";
            break;
        default:
            break;
    }
    std::snprintf(buf, sizeof buf, "version=%d.%d.%d; cpu_runtime=%u; isa=%s", v->major, v->minor,
                  v->patch, v->cpu_runtime, isa);
#endif
    return buf;
}

// C[M,N] = alpha op(A) op(B) + beta C, row-major.
void sgemm(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda,
           const float* B, int ldb, float beta, float* C, int ldc) {
#if defined(GEMM_BACKEND_OPENBLAS) || defined(GEMM_BACKEND_BLIS)
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N,
                K, alpha, A, lda, B, ldb, beta, C, ldc);
#elif defined(GEMM_BACKEND_ONEDNN)
    // dnnl_sgemm is row-major (unlike Fortran sgemm).
    dnnl_status_t st =
        dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    if (st != dnnl_success) {
        std::fprintf(stderr, "dnnl_sgemm failed: %d\n", static_cast<int>(st));
        std::exit(1);
    }
#endif
}

// ---------------------------------------------------------------------------------------------

struct AlignedFree {
    void operator()(float* p) const { std::free(p); }
};
using Buf = std::unique_ptr<float[], AlignedFree>;

Buf alloc_random(std::size_t n, std::mt19937& rng) {
    std::size_t bytes = ((n * sizeof(float) + 63) / 64) * 64;
    auto* p = static_cast<float*>(std::aligned_alloc(64, bytes));
    if (!p) {
        std::fprintf(stderr, "out of memory (%zu bytes)\n", bytes);
        std::exit(1);
    }
    // Cheap fill: a short random table repeated with a per-call offset (filling 200 MB with
    // mt19937 would take longer than the GEMMs). Values in [-1, 1); GEMM speed does not depend
    // on the values as long as they are normal floats.
    std::uniform_real_distribution<float> d(-1.f, 1.f);
    std::vector<float> table(4099);
    for (auto& v : table) v = d(rng);
    std::size_t off = rng() % table.size();
    for (std::size_t i = 0; i < n; ++i) p[i] = table[(i + off) % table.size()];
    return Buf(p);
}

struct Case {
    std::string layer;  // qkv, attn_proj, fc, fc_proj, logits
    std::string pass;   // fwd, dX, dW
    int count;          // calls per training step (layers)
    bool ta, tb;
    int M, N, K;
    float beta;
};

// The three GEMMs of a linear layer y[N,O] = x[N,I] W[O,I]^T.
void add_linear(std::vector<Case>& cs, const std::string& name, int count, int N, int I, int O,
                bool bias) {
    cs.push_back({name, "fwd", count, false, true, N, O, I, bias ? 1.f : 0.f});
    cs.push_back({name, "dX", count, false, false, N, I, O, 0.f});
    cs.push_back({name, "dW", count, true, false, O, I, N, 1.f});
}

// Storage extents (rows, cols) of op(A) [M,K] and op(B) [K,N] in row-major memory.
inline int a_rows(const Case& c) {
    return c.ta ? c.K : c.M;
}
inline int a_cols(const Case& c) {
    return c.ta ? c.M : c.K;
}
inline int b_rows(const Case& c) {
    return c.tb ? c.N : c.K;
}
inline int b_cols(const Case& c) {
    return c.tb ? c.K : c.N;
}

// Checks a few sampled entries of C against a double-precision reference.
bool check_entries(const Case& c, const float* A, const float* B, const float* C,
                   const std::vector<std::pair<int, int>>& idx, const std::vector<float>& c0,
                   double* max_rel) {
    const int lda = a_cols(c), ldb = b_cols(c);
    bool ok = true;
    *max_rel = 0;
    for (std::size_t s = 0; s < idx.size(); ++s) {
        auto [i, j] = idx[s];
        double acc = 0, mag = 0;
        for (int k = 0; k < c.K; ++k) {
            double a = c.ta ? A[static_cast<std::size_t>(k) * lda + i]
                            : A[static_cast<std::size_t>(i) * lda + k];
            double b = c.tb ? B[static_cast<std::size_t>(j) * ldb + k]
                            : B[static_cast<std::size_t>(k) * ldb + j];
            acc += a * b;
            mag += std::fabs(a * b);
        }
        acc += c.beta * c0[s];
        mag += std::fabs(c.beta * c0[s]);
        double got = C[static_cast<std::size_t>(i) * c.N + j];
        double rel = std::fabs(got - acc) / (mag + 1e-30);
        *max_rel = std::max(*max_rel, rel);
        if (rel > 1e-4) ok = false;
    }
    return ok;
}

// User + system CPU seconds of this process (all threads).
double cpu_s() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
           1e-6 * (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// GEMMs issued from inside an OpenMP parallel region (meshlm's kernels.h promises gemm runs
// single-threaded there): every thread runs its own small GEMM; all must be correct.
bool nested_check(int threads, std::mt19937& rng) {
    const int M = 96, N = 80, K = 64;
    Case c{"nested", "fwd", 1, false, true, M, N, K, 0.f};
    Buf A = alloc_random(static_cast<std::size_t>(M) * K, rng);
    Buf B = alloc_random(static_cast<std::size_t>(N) * K, rng);
    std::vector<Buf> Cs;
    for (int t = 0; t < threads; ++t)
        Cs.push_back(alloc_random(static_cast<std::size_t>(M) * N, rng));
    backend_set_threads(threads);
    int ran = 0;
#pragma omp parallel num_threads(threads) reduction(+ : ran)
    {
        int t = omp_get_thread_num();
        for (int rep = 0; rep < 20; ++rep)
            sgemm(false, true, M, N, K, 1.f, A.get(), K, B.get(), K, 0.f, Cs[t].get(), N);
        ran += 1;
    }
    std::vector<std::pair<int, int>> idx;
    for (int s = 0; s < 16; ++s)
        idx.push_back({static_cast<int>(rng() % M), static_cast<int>(rng() % N)});
    std::vector<float> c0(idx.size(), 0.f);
    bool ok = ran == threads;
    for (int t = 0; t < threads; ++t) {
        double rel;
        ok = check_entries(c, A.get(), B.get(), Cs[t].get(), idx, c0, &rel) && ok;
    }
    return ok;
}

void usage() {
    std::fprintf(stderr,
                 "usage: gemm_<lib> [--threads 1,2] [--reps 5] [--warmup 1] [--min-time 0]\n"
                 "                  [--arch gpt2|llama] [--tokens 1024] [--width W]\n"
                 "                  [--vocab V] [--layers L] [--heads H] [--kv-heads K]\n"
                 "                  [--ff F] [--only SUBSTR]\n"
                 "  gpt2 defaults: W 768, V 50257, L 12, H = K = 12, F 4W, biases\n"
                 "  llama defaults: W 576, V 49152, L 30, H 9, K 3, F 1536 (SwiGLU: fc is 2F\n"
                 "  wide), no biases\n");
}

std::vector<int> parse_list(const char* s) {
    std::vector<int> v;
    std::string str(s);
    std::size_t pos = 0;
    while (pos <= str.size()) {
        std::size_t comma = str.find(',', pos);
        if (comma == std::string::npos) comma = str.size();
        if (comma > pos) v.push_back(std::atoi(str.substr(pos, comma - pos).c_str()));
        pos = comma + 1;
    }
    return v;
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<int> thread_counts{1, 2};
    int reps = 5, warmup = 1, tokens = 1024;
    // 0 = the architecture's default (usage()).
    int C = 0, V = 0, L = 0, H = 0, Hkv = 0, F = 0;
    std::string arch = "gpt2";
    double min_time = 0;  // keep repeating past --reps until this many seconds were timed
    std::string only;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto next = [&]() -> const char* {
            if (i + 1 >= argc) {
                usage();
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "--threads")
            thread_counts = parse_list(next());
        else if (a == "--reps")
            reps = std::atoi(next());
        else if (a == "--warmup")
            warmup = std::atoi(next());
        else if (a == "--min-time")
            min_time = std::atof(next());
        else if (a == "--tokens")
            tokens = std::atoi(next());
        else if (a == "--width")
            C = std::atoi(next());
        else if (a == "--vocab")
            V = std::atoi(next());
        else if (a == "--layers")
            L = std::atoi(next());
        else if (a == "--arch")
            arch = next();
        else if (a == "--heads")
            H = std::atoi(next());
        else if (a == "--kv-heads")
            Hkv = std::atoi(next());
        else if (a == "--ff")
            F = std::atoi(next());
        else if (a == "--only")
            only = next();
        else {
            usage();
            return a == "-h" || a == "--help" ? 0 : 2;
        }
    }
    if (reps < 1) reps = 1;
    const bool llama = arch == "llama";
    if (!llama && arch != "gpt2") {
        std::fprintf(stderr, "--arch %s: expected gpt2 or llama\n", arch.c_str());
        return 2;
    }
    if (C == 0) C = llama ? 576 : 768;
    if (V == 0) V = llama ? 49152 : 50257;
    if (L == 0) L = llama ? 30 : 12;
    if (H == 0) H = llama ? 9 : 12;
    if (Hkv == 0) Hkv = llama ? 3 : H;
    if (F == 0) F = llama ? 1536 : 4 * C;
    if (C % H != 0 || H % Hkv != 0) {
        std::fprintf(stderr,
                     "--width %d, --heads %d, --kv-heads %d: the width must divide into "
                     "the heads and the heads into the key/value heads\n",
                     C, H, Hkv);
        return 2;
    }

    // The linear layers of one block (qkv: query heads plus key/value heads; fc: the gate and
    // up halves of SwiGLU side by side) and the head. Attention's own products are not here.
    std::vector<Case> cases;
    const int D = C / H;
    add_linear(cases, "qkv", L, tokens, C, (H + 2 * Hkv) * D, !llama);
    add_linear(cases, "attn_proj", L, tokens, H * D, C, !llama);
    add_linear(cases, "fc", L, tokens, C, llama ? 2 * F : F, !llama);
    add_linear(cases, "fc_proj", L, tokens, F, C, !llama);
    add_linear(cases, "logits", 1, tokens, C, V, false);

    std::printf(
        "{\"type\":\"meta\",\"lib\":\"%s\",\"info\":\"%s\",\"omp_max_threads\":%d,"
        "\"arch\":\"%s\",\"tokens\":%d,\"width\":%d,\"vocab\":%d,\"layers\":%d,\"reps\":%d,"
        "\"warmup\":%d}\n",
        kLib, backend_info().c_str(), omp_get_max_threads(), arch.c_str(), tokens, C, V, L, reps,
        warmup);
    std::fflush(stdout);

    std::mt19937 rng(1234);
    int max_t = *std::max_element(thread_counts.begin(), thread_counts.end());
    bool nested_ok = nested_check(std::max(2, max_t), rng);
    std::printf(
        "{\"type\":\"check\",\"lib\":\"%s\",\"what\":\"nested_parallel_region\",\"ok\":%s}\n", kLib,
        nested_ok ? "true" : "false");
    std::fflush(stdout);
    bool all_ok = nested_ok;

    for (const Case& c : cases) {
        std::string name = c.layer + "." + c.pass;
        if (!only.empty() && name.find(only) == std::string::npos) continue;
        std::size_t a_n = static_cast<std::size_t>(a_rows(c)) * a_cols(c);
        std::size_t b_n = static_cast<std::size_t>(b_rows(c)) * b_cols(c);
        std::size_t c_n = static_cast<std::size_t>(c.M) * c.N;
        Buf A = alloc_random(a_n, rng), B = alloc_random(b_n, rng), Cm = alloc_random(c_n, rng);
        const int lda = a_cols(c), ldb = b_cols(c), ldc = c.N;
        const double flops = 2.0 * c.M * c.N * c.K;

        // Correctness, once per case (first thread count): sampled entries vs fp64 reference.
        {
            backend_set_threads(thread_counts[0]);
            std::vector<std::pair<int, int>> idx;
            idx.push_back({0, 0});
            idx.push_back({c.M - 1, c.N - 1});
            for (int s = 0; s < 14; ++s)
                idx.push_back({static_cast<int>(rng() % c.M), static_cast<int>(rng() % c.N)});
            std::vector<float> c0;
            for (auto [i, j] : idx) c0.push_back(Cm[static_cast<std::size_t>(i) * c.N + j]);
            sgemm(c.ta, c.tb, c.M, c.N, c.K, 1.f, A.get(), lda, B.get(), ldb, c.beta, Cm.get(),
                  ldc);
            double rel;
            bool ok = check_entries(c, A.get(), B.get(), Cm.get(), idx, c0, &rel);
            all_ok = all_ok && ok;
            std::printf(
                "{\"type\":\"check\",\"lib\":\"%s\",\"what\":\"%s\",\"ok\":%s,"
                "\"max_rel_err\":%.3g}\n",
                kLib, name.c_str(), ok ? "true" : "false", rel);
        }

        for (int th : thread_counts) {
            backend_set_threads(th);
            for (int w = 0; w < warmup; ++w)
                sgemm(c.ta, c.tb, c.M, c.N, c.K, 1.f, A.get(), lda, B.get(), ldb, c.beta, Cm.get(),
                      ldc);
            std::vector<double> ts;
            double timed = 0;
            const double cpu0 = cpu_s();
            while (static_cast<int>(ts.size()) < reps || (timed < min_time && ts.size() < 1000)) {
                double t0 = now_s();
                sgemm(c.ta, c.tb, c.M, c.N, c.K, 1.f, A.get(), lda, B.get(), ldb, c.beta, Cm.get(),
                      ldc);
                double dt = now_s() - t0;
                ts.push_back(dt);
                timed += dt;
            }
            // CPU time / (wall time x threads): ~1 when the process had its cores (the BLAS
            // threads spin while waiting); clearly lower means another process took cores.
            const double util = (cpu_s() - cpu0) / (timed * th);
            std::vector<double> s = ts;
            std::sort(s.begin(), s.end());
            double med =
                s.size() % 2 ? s[s.size() / 2] : 0.5 * (s[s.size() / 2 - 1] + s[s.size() / 2]);
            std::printf(
                "{\"type\":\"result\",\"lib\":\"%s\",\"threads\":%d,\"layer\":\"%s\","
                "\"pass\":\"%s\",\"count\":%d,\"M\":%d,\"N\":%d,\"K\":%d,\"ta\":%d,"
                "\"tb\":%d,\"beta\":%g,\"reps\":%zu,\"median_s\":%.6g,\"min_s\":%.6g,"
                "\"max_s\":%.6g,\"gflops\":%.2f,\"cpu_util\":%.3f}\n",
                kLib, th, c.layer.c_str(), c.pass.c_str(), c.count, c.M, c.N, c.K, c.ta ? 1 : 0,
                c.tb ? 1 : 0, c.beta, s.size(), med, s.front(), s.back(), flops / med * 1e-9, util);
            std::fflush(stdout);
        }
    }
    return all_ok ? 0 : 1;
}
