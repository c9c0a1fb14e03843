// The `parallel` section of the option table (config_table.h): one `.add(...)` per key, in the
// order `meshlm config --list`, the dump and the help show them.
#include "meshlm/cli/config_table.h"

namespace meshlm::config_detail {

void add_parallel_options(OptionTable& t) {
    Section<ParallelConfig>(t, "parallel", &Config::parallel)
        .add("data", &ParallelConfig::data,
             "data-parallel ranks; parallel.data x parallel.model must equal the number of ranks",
             at_least(1))
        .add("model", &ParallelConfig::model,
             "tensor-parallel (Megatron) ranks per replica; must divide heads, 4 x d_model and "
             "vocab",
             at_least(1))
        .add("zero_stage", &ParallelConfig::zero_stage,
             "ZeRO: 0 replicated, 1 shards optimizer state, 2 also gradients, 3 also parameters",
             in_closed_open(0, 4));
}

}  // namespace meshlm::config_detail
