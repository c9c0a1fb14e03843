#include "meshlm/cli/staging_dir.h"

#include <unistd.h>

#include "meshlm/core/error.h"

namespace fs = std::filesystem;

namespace meshlm {

StagingDir::StagingDir(const std::string& out, bool force, const std::string& tag)
    : out_(fs::absolute(out).lexically_normal()) {
    if (out_.filename().empty()) out_ = out_.parent_path();
    if (fs::exists(out_) && !(fs::is_directory(out_) && fs::is_empty(out_)) && !force)
        MESHLM_INVALID(out, " exists and is not empty; pass --force to replace it");
    fs::create_directories(out_.parent_path());
    tmp_ = out_.parent_path() /
           ("." + out_.filename().string() + "." + tag + "." + std::to_string(getpid()));
    fs::remove_all(tmp_);
    fs::create_directories(tmp_);
}

StagingDir::~StagingDir() {
    std::error_code ec;
    if (!published_) fs::remove_all(tmp_, ec);
}

void StagingDir::publish() {
    if (fs::exists(out_)) fs::remove_all(out_);
    fs::rename(tmp_, out_);
    published_ = true;
}

}  // namespace meshlm
