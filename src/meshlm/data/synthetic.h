// Synthetic batches for benchmarks (data.synthetic): uniformly random tokens.
#pragma once

#include <cstdint>

#include "meshlm/core/rng.h"

namespace meshlm {

// B rows of T uniformly random tokens in [0, V); targets are each row's next tokens.
void random_tokens(int B, int T, int V, Philox& rng, std::int32_t* tokens, std::int32_t* targets);

}  // namespace meshlm
