// Helpers shared by the test suites: paths to fixtures and the built binary, running a command.
#pragma once

#include <string>

namespace meshlm::test {

std::string source_dir();                      // repository root
std::string meshlm_binary();                   // build/meshlm
std::string fixture(const std::string& name);  // tests/fixtures/<name>
// A fresh empty directory under the system temp dir, removed at exit.
std::string temp_dir(const std::string& tag);

struct CommandResult {
    int exit_code;
    std::string output;  // stdout and stderr, interleaved
};
CommandResult run_command(const std::string& cmd);

}  // namespace meshlm::test
