// The `parallel` config section: how the world's ranks split the work.
#pragma once

namespace meshlm {

struct ParallelConfig {
    int data = 1;        // data-parallel replicas; data * model must equal the number of ranks
    int model = 1;       // tensor-parallel (Megatron) ranks per replica
    int zero_stage = 0;  // 0 replicated, 1 optimizer state sharded, 2 + gradients, 3 + params
};

}  // namespace meshlm
