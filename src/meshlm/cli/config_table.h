// The option table of the run configuration: every key, its field, help and constraint, a file
// per section (config_options_<section>.cpp), and the rules between keys (config_checks.cpp).
// To add an option: one `.add(...)` line in its section's file (and the field in its struct). To
// add a section: an add_<section>_options here, called in option_table(); a section with no
// options is reserved (accepted only empty).
#pragma once

#include <vector>

#include "meshlm/cli/config_option.h"

namespace meshlm::config_detail {

// The table, built once: sections in dump order, then the cross-checks.
const OptionTable& option_table();

void add_model_options(OptionTable& t);
void add_data_options(OptionTable& t);
void add_train_options(OptionTable& t);
void add_optim_options(OptionTable& t);
void add_log_options(OptionTable& t);
void add_parallel_options(OptionTable& t);
void add_checkpoint_options(OptionTable& t);
std::vector<CrossCheck> config_cross_checks();

}  // namespace meshlm::config_detail
