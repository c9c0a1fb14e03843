// safetensors files: an 8-byte little-endian header length, a JSON header naming each tensor's
// dtype, shape and byte range, then the raw little-endian data.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "meshlm/core/tensor.h"

namespace meshlm {

struct SafetensorsEntry {
    DType dtype;
    Shape shape;
    std::size_t begin, end;  // byte range within the data section
};

// Reads a whole file and validates it (header size, JSON, dtypes, offsets contiguous and
// inside the file, sizes matching shapes). Errors name the file and what is wrong.
class SafetensorsFile {
  public:
    explicit SafetensorsFile(const std::string& path);

    bool has(const std::string& name) const { return entries_.count(name) > 0; }
    const SafetensorsEntry& entry(const std::string& name) const;
    std::vector<std::string> names() const;
    const std::map<std::string, std::string>& metadata() const { return metadata_; }

    // Copies a tensor out, checking dtype and (if given) shape.
    std::vector<float> f32(const std::string& name, const Shape* expect = nullptr) const;
    std::vector<std::int32_t> i32(const std::string& name) const;
    // The tensor's raw little-endian bytes (entry(name) gives dtype and size), valid while the
    // file object lives.
    const void* data(const std::string& name) const;
    const std::string& path() const { return path_; }

  private:
    std::string path_;
    std::vector<char> bytes_;
    std::size_t data_start_ = 0;
    std::map<std::string, SafetensorsEntry> entries_;
    std::map<std::string, std::string> metadata_;
};

struct SafetensorsTensor {
    std::string name;
    DType dtype;
    Shape shape;
    const void* data;
};

// Where a file of these tensors (in this order; their data pointers are not read) puts
// everything: `head` is the 8-byte length and the JSON header padded to 8 bytes, tensor i's
// data starts at byte offsets[i] of the file, and the file has `size` bytes. Lets several
// writers fill one file's tensors in place.
struct SafetensorsPlan {
    std::string head;
    std::vector<std::size_t> offsets;
    std::size_t size;
};
SafetensorsPlan plan_safetensors(const std::vector<SafetensorsTensor>& tensors,
                                 const std::map<std::string, std::string>& metadata = {});

// Writes tensors in the given order to `path` atomically (temporary file, fsync, rename).
void write_safetensors(const std::string& path, const std::vector<SafetensorsTensor>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace meshlm
