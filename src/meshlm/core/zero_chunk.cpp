#include "meshlm/core/zero_chunk.h"

#include "meshlm/core/error.h"

namespace meshlm {

std::size_t zero_chunk(std::size_t total, int ranks) {
    MESHLM_CHECK(ranks >= 1, "zero_chunk over ", ranks, " ranks");
    const std::size_t n = static_cast<std::size_t>(ranks);
    return ranks == 1 ? total : ((total + n - 1) / n + 15) / 16 * 16;
}

void check_zero_stage(int stage) {
    if (stage < 0 || stage > 3) MESHLM_INVALID("parallel.zero_stage must be 0-3 (got ", stage, ")");
}

}  // namespace meshlm
