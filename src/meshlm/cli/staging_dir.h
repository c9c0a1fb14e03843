// An output directory built in a hidden sibling and renamed into place at the end, so a failed
// command leaves nothing half-written (meshlm convert, meshlm reshard).
#pragma once

#include <filesystem>
#include <string>

namespace meshlm {

class StagingDir {
  public:
    // Refuses an existing non-empty `out` unless `force`; `tag` names the command in the
    // sibling's name (.OUT.<tag>.<pid>).
    StagingDir(const std::string& out, bool force, const std::string& tag);
    ~StagingDir();
    StagingDir(const StagingDir&) = delete;
    StagingDir& operator=(const StagingDir&) = delete;

    std::string path() const { return tmp_.string(); }
    std::string final_path() const { return out_.string(); }
    // Replaces `out` with the staged directory.
    void publish();

  private:
    std::filesystem::path out_, tmp_;
    bool published_ = false;
};

}  // namespace meshlm
