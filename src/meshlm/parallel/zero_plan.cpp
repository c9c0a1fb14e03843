#include "meshlm/parallel/zero_plan.h"

#include "meshlm/core/error.h"
#include "meshlm/core/zero_chunk.h"
#include "meshlm/parallel/fsdp.h"

namespace meshlm {

ZeroPlan::ZeroPlan(std::size_t total_floats, int ranks_, int rank_, int stage_)
    : total(total_floats), ranks(ranks_), rank(rank_), stage(stage_) {
    check_zero_stage(stage);
    MESHLM_CHECK(ranks >= 1 && rank >= 0 && rank < ranks, "bad rank ", rank, " of ", ranks);
    chunk = zero_chunk(total, ranks);
    padded = chunk * static_cast<std::size_t>(ranks);
}

ZeroMemory zero_memory(const ZeroPlan& p, const ParamLayout& layout, int optimizer_states,
                       bool bf16) {
    const std::size_t full = p.padded * sizeof(float), shard = p.chunk * sizeof(float);
    ZeroMemory m{};
    m.params = p.stage >= 3 ? shard : full;
    m.grads = p.stage >= 2 ? shard : full;
    m.optimizer = optimizer_states * (p.stage >= 1 ? shard : full);
    if (p.stage >= 2 && p.ranks > 1)
        m.working = fsdp_sizes(layout, p, p.stage >= 3, bf16).working() * sizeof(float);
    else
        m.working = (p.stage >= 2 ? full : 0) + (p.stage >= 3 ? full : 0);
    return m;
}

const char* zero_working_label(const ZeroPlan& p) {
    if (p.ranks == 1) return "whole-model working buffers";
    return p.stage >= 3 ? "FSDP unit buffers" : "gradient unit buffers";
}

}  // namespace meshlm
