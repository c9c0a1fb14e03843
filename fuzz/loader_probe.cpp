// loader_probe.h: the token-range check of the loader probes.
#include "loader_probe.h"

#include <cstdio>
#include <cstdlib>

namespace meshlm::fuzz {

void check_batch(const DataLoader& loader, const std::int32_t* tokens, int n) {
    for (int i = 0; i < n; ++i)
        if (tokens[i] < 0 || tokens[i] >= loader.vocab_size()) {
            std::fprintf(stderr,
                         "fuzz finding: the loader returned token %d outside the "
                         "vocabulary [0, %d)\n",
                         tokens[i], loader.vocab_size());
            std::abort();
        }
}

}  // namespace meshlm::fuzz
