#include "meshlm/data/synthetic.h"

#include "meshlm/core/trace.h"

namespace meshlm {

void random_tokens(int B, int T, int V, Philox& rng, std::int32_t* tokens, std::int32_t* targets) {
    TraceScope trace("data");
    for (int b = 0; b < B; ++b) {
        auto prev = static_cast<std::int32_t>(rng.below(V));
        for (int t = 0; t < T; ++t) {
            auto next = static_cast<std::int32_t>(rng.below(V));
            tokens[b * T + t] = prev;
            targets[b * T + t] = next;
            prev = next;
        }
    }
}

}  // namespace meshlm
