#include "meshlm/io/safetensors_set.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "meshlm/core/atomic_file.h"
#include "meshlm/core/error.h"

namespace fs = std::filesystem;

namespace meshlm {
namespace {

std::string index_name(const std::string& stem) {
    return stem + ".safetensors.index.json";
}

std::string shard_name(const std::string& stem, std::size_t i, std::size_t n) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "-%05zu-of-%05zu", i + 1, n);
    return stem + buf + ".safetensors";
}

std::size_t tensor_bytes(const SafetensorsTensor& t) {
    return static_cast<std::size_t>(t.shape.numel()) * dtype_size(t.dtype);
}

// Removes files of this stem that the layout just written does not use.
void remove_stale(const std::string& dir, const std::string& stem,
                  const std::set<std::string>& keep) {
    const std::regex shard(
        std::regex_replace(stem, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)") +
        R"(-\d{5}-of-\d{5}\.safetensors)");
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
        const std::string name = e.path().filename().string();
        if (keep.count(name)) continue;
        if (name == stem + ".safetensors" || name == index_name(stem) ||
            std::regex_match(name, shard))
            fs::remove(e.path(), ec);
    }
}

}  // namespace

std::uint16_t bf16_from_f32(float x) {
    std::uint32_t u;
    std::memcpy(&u, &x, 4);
    if (std::isnan(x)) return static_cast<std::uint16_t>((u >> 16) | 0x40);
    // Adding 0x7fff plus the lowest kept bit rounds to nearest with ties to even; a carry out of
    // the mantissa bumps the exponent, which is the correctly rounded result (up to infinity).
    u += 0x7fffu + ((u >> 16) & 1u);
    return static_cast<std::uint16_t>(u >> 16);
}

float f32_from_bf16(std::uint16_t b) {
    const std::uint32_t u = static_cast<std::uint32_t>(b) << 16;
    float x;
    std::memcpy(&x, &u, 4);
    return x;
}

float f32_from_f16(std::uint16_t h) {
    const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
    const std::uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    std::uint32_t u;
    if (exp == 0) {
        // Zero or subnormal: mant * 2^-24, exact in float.
        const float x = static_cast<float>(mant) * 0x1p-24f;
        std::memcpy(&u, &x, 4);
        u |= sign;
    } else if (exp == 31) {
        u = sign | 0x7f800000u | (mant << 13) | (mant ? 0x400000u : 0u);  // inf, or a quiet NaN
    } else {
        u = sign | ((exp + 127 - 15) << 23) | (mant << 13);
    }
    float x;
    std::memcpy(&x, &u, 4);
    return x;
}

std::uint16_t f16_from_f32(float x) {
    std::uint32_t u;
    std::memcpy(&u, &x, 4);
    const auto sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
    const std::uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return sign | 0x7e00u;   // NaN
    if (a >= 0x477ff000u) return sign | 0x7c00u;  // >= 65520: rounds past 65504 to infinity
    if (a < 0x38800000u) {
        // Below 2^-14: a subnormal (or zero) of f16, i.e. a multiple of 2^-24. Scaling by 2^24 is
        // exact, and nearbyint rounds to nearest even (the default mode); 1024 is 2^-14 itself.
        return sign | static_cast<std::uint16_t>(std::nearbyint(std::fabs(x) * 0x1p24f));
    }
    // Rebias the exponent, then round away 13 mantissa bits to nearest even; a carry out of the
    // mantissa bumps the exponent, which is the correctly rounded result.
    std::uint32_t r = a - ((127u - 15u) << 23);
    r += 0xfffu + ((r >> 13) & 1u);
    return sign | static_cast<std::uint16_t>(r >> 13);
}

std::vector<std::string> write_safetensors_sharded(
    const std::string& dir, const std::string& stem, const std::vector<SafetensorsTensor>& tensors,
    const std::map<std::string, std::string>& metadata, std::size_t max_shard_bytes) {
    std::size_t total = 0, params = 0;
    for (const auto& t : tensors) {
        total += tensor_bytes(t);
        params += static_cast<std::size_t>(t.shape.numel());
    }
    fs::create_directories(dir);
    if (max_shard_bytes == 0 || total <= max_shard_bytes) {
        const std::string name = stem + ".safetensors";
        write_safetensors(dir + "/" + name, tensors, metadata);
        remove_stale(dir, stem, {name});
        return {name};
    }
    // Greedy: close the current shard when the next tensor would overflow it.
    std::vector<std::vector<SafetensorsTensor>> shards(1);
    std::size_t used = 0;
    for (const auto& t : tensors) {
        const std::size_t b = tensor_bytes(t);
        if (!shards.back().empty() && used + b > max_shard_bytes) {
            shards.emplace_back();
            used = 0;
        }
        shards.back().push_back(t);
        used += b;
    }
    std::vector<std::string> written;
    nlohmann::ordered_json weight_map = nlohmann::ordered_json::object();
    std::map<std::string, std::string> sorted_map;  // HF writes the weight map sorted by name
    for (std::size_t i = 0; i < shards.size(); ++i) {
        const std::string name = shard_name(stem, i, shards.size());
        write_safetensors(dir + "/" + name, shards[i], metadata);
        for (const auto& t : shards[i]) sorted_map[t.name] = name;
        written.push_back(name);
    }
    for (const auto& [k, v] : sorted_map) weight_map[k] = v;
    nlohmann::ordered_json index;
    index["metadata"] = {{"total_parameters", params}, {"total_size", total}};
    index["weight_map"] = weight_map;
    write_file_atomic(dir + "/" + index_name(stem), index.dump(2) + "\n");
    written.push_back(index_name(stem));
    remove_stale(dir, stem, {written.begin(), written.end()});
    return written;
}

bool SafetensorsSet::present(const std::string& dir, const std::string& stem) {
    return fs::exists(dir + "/" + index_name(stem)) ||
           fs::exists(dir + "/" + stem + ".safetensors");
}

SafetensorsSet::SafetensorsSet(const std::string& dir, const std::string& stem) : dir_(dir) {
    const std::string index_path = dir + "/" + index_name(stem);
    if (!fs::exists(index_path)) {
        const std::string name = stem + ".safetensors";
        if (!fs::exists(dir + "/" + name))
            MESHLM_INVALID(dir, " holds neither ", name, " nor ", index_name(stem));
        files_.push_back(name);
        shards_.push_back(std::make_unique<SafetensorsFile>(dir + "/" + name));
        for (const auto& n : shards_[0]->names()) where_[n] = 0;
        return;
    }
    nlohmann::json index;
    try {
        std::ifstream in(index_path);
        index = nlohmann::json::parse(in);
    } catch (const std::exception& e) {
        MESHLM_INVALID(index_path, ": not valid JSON: ", e.what());
    }
    if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
        MESHLM_INVALID(index_path, ": no \"weight_map\" object (not a safetensors index)");
    // The tensors the index assigns to each file, files in order of first mention.
    std::map<std::string, std::set<std::string>> claimed;
    for (const auto& [tensor, file] : index["weight_map"].items()) {
        if (!file.is_string())
            MESHLM_INVALID(index_path, ": weight_map[\"", tensor, "\"] is not a file name");
        const std::string f = file.get<std::string>();
        if (f.empty() || f.find('/') != std::string::npos || f == "." || f == "..")
            MESHLM_INVALID(index_path, ": weight_map[\"", tensor, "\"] = \"", f,
                           "\" is not a file name inside the directory");
        if (!claimed.count(f)) files_.push_back(f);
        claimed[f].insert(tensor);
    }
    if (files_.empty()) MESHLM_INVALID(index_path, ": the weight_map is empty");
    std::sort(files_.begin(), files_.end());
    for (const auto& f : files_)
        if (!fs::exists(dir + "/" + f))
            MESHLM_INVALID(index_path, " names ", f, ", which does not exist in ", dir,
                           " (missing shard)");
    for (std::size_t i = 0; i < files_.size(); ++i) {
        shards_.push_back(std::make_unique<SafetensorsFile>(dir + "/" + files_[i]));
        const auto& want = claimed[files_[i]];
        for (const auto& n : shards_[i]->names()) {
            auto [it, fresh] = where_.emplace(n, i);
            if (!fresh)
                MESHLM_INVALID(dir, ": tensor '", n, "' appears in both ", files_[it->second],
                               " and ", files_[i]);
            if (!want.count(n))
                MESHLM_INVALID(dir + "/" + files_[i], " holds tensor '", n, "' that ",
                               index_name(stem), " does not assign to it");
        }
        for (const auto& n : want)
            if (!shards_[i]->has(n))
                MESHLM_INVALID(index_path, " says tensor '", n, "' is in ", files_[i],
                               ", but that file does not hold it");
    }
}

const SafetensorsFile& SafetensorsSet::shard_of(const std::string& name) const {
    auto it = where_.find(name);
    if (it == where_.end()) MESHLM_INVALID(dir_, ": no tensor named '", name, "'");
    return *shards_[it->second];
}

const SafetensorsEntry& SafetensorsSet::entry(const std::string& name) const {
    return shard_of(name).entry(name);
}

const std::string& SafetensorsSet::file_of(const std::string& name) const {
    shard_of(name);  // throws when absent
    return files_[where_.at(name)];
}

std::vector<std::string> SafetensorsSet::names() const {
    std::vector<std::string> out;
    for (const auto& kv : where_) out.push_back(kv.first);
    return out;
}

std::vector<float> SafetensorsSet::f32(const std::string& name, const Shape* expect) const {
    const SafetensorsFile& f = shard_of(name);
    const SafetensorsEntry& e = f.entry(name);
    if (expect && !(e.shape == *expect))
        MESHLM_INVALID(f.path(), ": tensor '", name, "' has shape ", e.shape.str(), ", expected ",
                       expect->str());
    std::vector<float> out(static_cast<std::size_t>(e.shape.numel()));
    const char* src = static_cast<const char*>(f.data(name));
    auto widen = [&](float (*from16)(std::uint16_t)) {
        for (std::size_t i = 0; i < out.size(); ++i) {
            std::uint16_t h;
            std::memcpy(&h, src + 2 * i, 2);
            out[i] = from16(h);
        }
    };
    switch (e.dtype) {
        case DType::f32:
            std::memcpy(out.data(), src, out.size() * 4);
            break;
        case DType::bf16:
            widen(f32_from_bf16);
            break;
        case DType::f16:
            widen(f32_from_f16);
            break;
        default:
            MESHLM_INVALID(f.path(), ": tensor '", name, "' is ", dtype_name(e.dtype),
                           "; expected a floating-point tensor (F32, BF16 or F16)");
    }
    return out;
}

}  // namespace meshlm
