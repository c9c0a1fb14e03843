// Position schemes that are not parameters: rotary frequencies (with context-extension scaling)
// and ALiBi slopes.
#pragma once

#include <cstdint>
#include <vector>

#include "meshlm/model/model_config.h"

namespace meshlm {

// inv_freq[i] = rope_base^(-2i / rope_dim) for i < rope_dim / 2, rescaled by model.rope_scaling:
// linear divides every frequency by rope_factor; llama3 divides the low frequencies (wavelength
// above original_max / low_freq_factor) by rope_factor, keeps the high ones (wavelength below
// original_max / high_freq_factor) and interpolates smoothly in between (Llama 3.1's rule).
std::vector<float> rope_inv_freq(const ModelConfig& cfg);

// ALiBi's per-head slopes for any head count: for a power of two n, (2^(-8/n))^(i+1); otherwise
// the slopes of the largest power of two p < n, then every other slope of the 2p sequence for
// the remaining n - p heads (Press et al.'s recipe).
std::vector<float> alibi_slopes(int n_head);

// The sinusoid of position p: [sin(p w_0) .. sin(p w_{C/2-1}) | cos(p w_0) .. cos(p w_{C/2-1})],
// w_j = lam^(-2j/C), in double and rounded once (the same floats wherever it is computed).
void sinusoid(float* out, std::int64_t p, int C, float lam);

// Transformer-XL's relative-position sinusoids (Transformer-VQ): row d (d = 0..max_dist) is
// sinusoid(d).
std::vector<float> xl_sinusoids(int C, int max_dist, float lam);

}  // namespace meshlm
