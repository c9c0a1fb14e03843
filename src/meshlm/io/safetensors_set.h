// A set of safetensors files holding one model: either a single `<stem>.safetensors`, or Hugging
// Face's sharded layout `<stem>-00001-of-0000N.safetensors` ... plus
// `<stem>.safetensors.index.json` ({"metadata": {"total_size": bytes}, "weight_map":
// {tensor: file}}). Tensors are never split across files.
//
// exports: write_safetensors_sharded, SafetensorsSet, bf16_from_f32, f32_from_bf16,
// f16_from_f32, f32_from_f16
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "meshlm/io/safetensors.h"

namespace meshlm {

// Writes `tensors` under `dir`: one `<stem>.safetensors` when their data fits in
// max_shard_bytes (0 = never shard), else shards filled greedily in the given order (a tensor
// larger than the limit gets a shard of its own) plus the index, written last. Every file is
// written atomically; files of the other layout with the same stem are removed afterwards, so
// the directory is readable, old or new, at every moment. Each shard carries `metadata`.
// Returns the file names written, relative to dir, the index last.
std::vector<std::string> write_safetensors_sharded(
    const std::string& dir, const std::string& stem, const std::vector<SafetensorsTensor>& tensors,
    const std::map<std::string, std::string>& metadata, std::size_t max_shard_bytes);

// Reads either layout (the index when present). Validates on open: every file the index names
// exists, is valid safetensors and holds exactly the tensors the index assigns to it, and no
// tensor appears twice. Errors name the file and what is wrong (InvalidInput).
class SafetensorsSet {
  public:
    SafetensorsSet(const std::string& dir, const std::string& stem = "model");
    // Whether dir holds `<stem>.safetensors` or `<stem>.safetensors.index.json`.
    static bool present(const std::string& dir, const std::string& stem = "model");

    bool has(const std::string& name) const { return where_.count(name) > 0; }
    const SafetensorsEntry& entry(const std::string& name) const;
    std::vector<std::string> names() const;  // sorted
    // Metadata of the first file.
    const std::map<std::string, std::string>& metadata() const { return shards_[0]->metadata(); }
    const std::vector<std::string>& files() const { return files_; }  // relative to dir
    const std::string& file_of(const std::string& name) const;
    // Copies a tensor out as float (F32 as is, BF16 and F16 widened exactly), checking the shape if
    // given.
    std::vector<float> f32(const std::string& name, const Shape* expect = nullptr) const;

  private:
    const SafetensorsFile& shard_of(const std::string& name) const;

    std::string dir_;
    std::vector<std::string> files_;
    std::vector<std::unique_ptr<SafetensorsFile>> shards_;
    std::map<std::string, std::size_t> where_;  // tensor -> index into shards_
};

// bf16 <-> f32. bf16_from_f32 rounds to nearest, ties to even; NaN stays a (quiet) NaN.
std::uint16_t bf16_from_f32(float x);
float f32_from_bf16(std::uint16_t b);
// IEEE half <-> f32. f32_from_f16 is exact (NaN stays a quiet NaN); f16_from_f32 rounds to
// nearest, ties to even, overflowing to infinity from 65520 on.
float f32_from_f16(std::uint16_t h);
std::uint16_t f16_from_f32(float x);

}  // namespace meshlm
