#include "meshlm/io/run_files.h"

#include <filesystem>

namespace meshlm {

std::string run_tokenizer_copy(const std::string& run_dir, const std::string& spec) {
    return run_dir + "/" + std::filesystem::path(spec).filename().string();
}

}  // namespace meshlm
