// A safetensors file written in place, in parts, by several processes at once (the final weights
// of a multi-rank run, train/final_weights.h): one process creates the temporary file at its
// final size holding the header (plan_safetensors), every writer puts its pieces of the tensors
// where they go and syncs, and one process publishes the file under its final name. The writers
// must share the file's filesystem.
#pragma once

#include <cstddef>
#include <string>

#include "meshlm/io/safetensors.h"

namespace meshlm {

// The temporary file the parts go into until publish_safetensors_parts: PATH.tmp.
std::string safetensors_parts_path(const std::string& path);
// Creates safetensors_parts_path(path) at plan.size bytes, holding plan.head.
void create_safetensors_parts(const std::string& path, const SafetensorsPlan& plan);

// One writer's handle on the temporary file of `path` (created already), closed on every path.
class SafetensorsPartWriter {
  public:
    SafetensorsPartWriter(const std::string& path, const SafetensorsPlan& plan);
    ~SafetensorsPartWriter();
    SafetensorsPartWriter(const SafetensorsPartWriter&) = delete;
    SafetensorsPartWriter& operator=(const SafetensorsPartWriter&) = delete;
    // n floats into tensor `tensor` (f32; index into the plan's tensors) from its element `at`.
    void write_f32(std::size_t tensor, std::size_t at, const float* data, std::size_t n);
    void sync();  // this writer's parts are on disk

  private:
    const SafetensorsPlan& plan_;
    std::string tmp_;
    int fd_;
};

// Renames the complete temporary file to `path` and syncs its directory.
void publish_safetensors_parts(const std::string& path);
// Removes the temporary file of `path` (after a failure), if any.
void discard_safetensors_parts(const std::string& path);

}  // namespace meshlm
