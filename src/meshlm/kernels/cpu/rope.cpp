// Rotary position embedding (RoFormer), in place. Row n at position p = pos[n] (or n % T) turns
// each pair i < rope_dim / 2 of every head by the angle a_i = p * inv_freq[i]:
//   forward:  (x0, x1) <- (x0 cos a - x1 sin a,  x0 sin a + x1 cos a)
//   backward: the transpose, (g0, g1) <- (g0 cos a + g1 sin a,  -g0 sin a + g1 cos a)
// with the pair (2i, 2i + 1) when interleaved (GPT-J) or (i, i + rope_dim / 2) (NeoX, Llama).
// Dims rope_dim..D-1 pass through.
//
// Angles: a_i = float(p) * inv_freq[i] rounded to float, exactly HF transformers' float32
// `pos @ inv_freq`; cos and sin of that float angle are evaluated in double and rounded once,
// so each is the correctly rounded value (HF's float32 cos/sin can be an ulp off).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "meshlm/core/error.h"
#include "meshlm/kernels/kernels.h"

namespace meshlm::kernels {
namespace {

constexpr int kMaxPairs = 512;

// cos and sin of pair i at position p: the angle float(p) * inv_freq[i] rounded to float, its
// cos and sin in double rounded once.
inline void angles(int p, int half, const float* inv_freq, float* cs, float* sn) {
    for (int i = 0; i < half; ++i) {
        const float a = static_cast<float>(p) * inv_freq[i];
        cs[i] = static_cast<float>(std::cos(static_cast<double>(a)));
        sn[i] = static_cast<float>(std::sin(static_cast<double>(a)));
    }
}

// Rows at positions n % T (no position list) share T distinct angle rows, kept per calling
// thread with what they were computed for: a training step's many calls (q and k heads of every
// block, forward and backward) compute them once, and nothing is allocated after the first.
struct AngleTable {
    std::vector<float> rows;      // T rows of cos | sin
    std::vector<float> inv_freq;  // the frequencies they were computed for
    int T = 0;
};
thread_local AngleTable t_table;

// The table for (T, inv_freq[0..half)), recomputed only when either changed.
const float* angle_table(int T, int half, const float* inv_freq, bool big) {
    AngleTable& tb = t_table;
    if (tb.T == T && static_cast<int>(tb.inv_freq.size()) == half &&
        std::equal(tb.inv_freq.begin(), tb.inv_freq.end(), inv_freq))
        return tb.rows.data();
    const std::size_t need = static_cast<std::size_t>(T) * 2 * half;
    if (tb.rows.size() < need) tb.rows.resize(need);
    float* table = tb.rows.data();
#pragma omp parallel for schedule(static) if (big)
    for (int t = 0; t < T; ++t)
        angles(t, half, inv_freq, table + static_cast<std::size_t>(t) * 2 * half,
               table + static_cast<std::size_t>(t) * 2 * half + half);
    tb.inv_freq.assign(inv_freq, inv_freq + half);
    tb.T = T;
    return table;
}

template <bool kForward>
void rope(float* x, int ld, const int32_t* pos, int N, int T, int heads, int D, int rope_dim,
          bool interleaved, const float* inv_freq) {
    MESHLM_CHECK(rope_dim >= 0 && rope_dim % 2 == 0 && rope_dim <= D && rope_dim / 2 <= kMaxPairs,
                 "rope_dim ", rope_dim, " must be even and <= head dim ", D);
    MESHLM_CHECK(pos != nullptr || T >= 1, "rope without positions needs T >= 1");
    const int half = rope_dim / 2;
    if (half == 0) return;
    const bool big = static_cast<long>(N) * heads * D >= 32768;
    // Without a position list, N / T rows share each position: their angles from the table
    // (filled in parallel when it changes, read by every thread below).
    const bool shared = !pos && N > T;
    const float* table = shared ? angle_table(T, half, inv_freq, big) : nullptr;
    // Trig per row costs rope_dim / 2 sincos; a few rows (decoding) stay on one thread.
#pragma omp parallel for schedule(static) if (big)
    for (int n = 0; n < N; ++n) {
        const int p = pos ? pos[n] : n % T;
        float cs[kMaxPairs], sn[kMaxPairs];
        if (shared) {
            const float* row = table + static_cast<std::size_t>(p) * 2 * half;
            std::copy_n(row, half, cs);
            std::copy_n(row + half, half, sn);
        } else {
            angles(p, half, inv_freq, cs, sn);
        }
        if (!kForward)
            for (int i = 0; i < half; ++i) sn[i] = -sn[i];  // rotation by -a
        const int stride = interleaved ? 2 : 1, partner = interleaved ? 1 : half;
        for (int h = 0; h < heads; ++h) {
            float* r = x + static_cast<std::size_t>(n) * ld + static_cast<std::size_t>(h) * D;
#pragma omp simd
            for (int i = 0; i < half; ++i) {
                float* a = r + i * stride;
                const float x0 = a[0], x1 = a[partner];
                a[0] = x0 * cs[i] - x1 * sn[i];
                a[partner] = x0 * sn[i] + x1 * cs[i];
            }
        }
    }
}

}  // namespace

void rope_forward(float* x, int ld, const int32_t* pos, int N, int T, int heads, int D,
                  int rope_dim, bool interleaved, const float* inv_freq) {
    rope<true>(x, ld, pos, N, T, heads, D, rope_dim, interleaved, inv_freq);
}

void rope_backward(float* dx, int ld, const int32_t* pos, int N, int T, int heads, int D,
                   int rope_dim, bool interleaved, const float* inv_freq) {
    rope<false>(dx, ld, pos, N, T, heads, D, rope_dim, interleaved, inv_freq);
}

}  // namespace meshlm::kernels
