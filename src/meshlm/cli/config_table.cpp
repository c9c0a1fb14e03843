#include "meshlm/cli/config_table.h"

namespace meshlm::config_detail {

const OptionTable& option_table() {
    static const OptionTable table = [] {
        OptionTable t;
        add_model_options(t);
        add_data_options(t);
        add_train_options(t);
        add_optim_options(t);
        add_log_options(t);
        add_parallel_options(t);
        add_checkpoint_options(t);
        t.cross_checks = config_cross_checks();
        return t;
    }();
    return table;
}

}  // namespace meshlm::config_detail
