#include "meshlm/io/safetensors.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "meshlm/core/atomic_file.h"
#include "meshlm/core/error.h"

namespace meshlm {
namespace {

DType parse_dtype(const std::string& s, const std::string& path, const std::string& name) {
    if (s == "F32") return DType::f32;
    if (s == "BF16") return DType::bf16;
    if (s == "F16") return DType::f16;
    if (s == "I32") return DType::i32;
    if (s == "U16") return DType::u16;
    MESHLM_INVALID(path, ": tensor '", name, "' has dtype ", s,
                   "; supported dtypes are F32, BF16, F16, I32, U16");
}

const char* dtype_tag(DType t) {
    switch (t) {
        case DType::f32:
            return "F32";
        case DType::bf16:
            return "BF16";
        case DType::f16:
            return "F16";
        case DType::i32:
            return "I32";
        case DType::u16:
            return "U16";
    }
    return "?";
}

// A field of a tensor's header entry, or a named error (never a JSON exception).
const nlohmann::json& field(const nlohmann::json& e, const char* key, const std::string& path,
                            const std::string& name) {
    if (!e.is_object() || !e.contains(key))
        MESHLM_INVALID(path, ": tensor '", name, "' has no \"", key, "\" in its header entry");
    return e[key];
}

std::size_t offset_at(const nlohmann::json& offsets, std::size_t i, const std::string& path,
                      const std::string& name) {
    if (!offsets.is_array() || offsets.size() != 2 || !offsets[i].is_number_unsigned())
        MESHLM_INVALID(path, ": tensor '", name, "' has data_offsets ", offsets.dump(),
                       "; expected [begin, end] in bytes");
    return offsets[i].get<std::size_t>();
}

// One tensor's header entry: dtype, shape (at most Shape::kMaxDims dims, none negative) and
// data_offsets that span exactly the shape's bytes inside a data section of data_size bytes.
SafetensorsEntry parse_entry(const nlohmann::json& e, const std::string& path,
                             const std::string& name, std::size_t data_size) {
    SafetensorsEntry entry;
    const nlohmann::json& dtype = field(e, "dtype", path, name);
    if (!dtype.is_string())
        MESHLM_INVALID(path, ": tensor '", name, "' has dtype ", dtype.dump(), ", not a string");
    entry.dtype = parse_dtype(dtype.get<std::string>(), path, name);
    const nlohmann::json& shape = field(e, "shape", path, name);
    if (!shape.is_array() || shape.size() > static_cast<std::size_t>(Shape::kMaxDims))
        MESHLM_INVALID(path, ": tensor '", name, "' has shape ", shape.dump(),
                       "; expected a list of at most ", Shape::kMaxDims, " sizes");
    // The element count, checked against the data section before it can overflow.
    std::size_t bytes = dtype_size(entry.dtype);
    for (const auto& d : shape) {
        if (!d.is_number_unsigned())
            MESHLM_INVALID(path, ": tensor '", name, "' has shape ", shape.dump(),
                           "; sizes must be whole numbers >= 0");
        const std::uint64_t n = d.get<std::uint64_t>();
        if (n > data_size || (n > 0 && bytes > data_size / n))
            MESHLM_INVALID(path, ": tensor '", name, "' ", shape.dump(),
                           " is larger than the data section (", data_size,
                           " bytes): truncated file?");
        bytes *= n;
        entry.shape.dims[entry.shape.ndim++] = static_cast<std::int64_t>(n);
    }
    const nlohmann::json& offsets = field(e, "data_offsets", path, name);
    entry.begin = offset_at(offsets, 0, path, name);
    entry.end = offset_at(offsets, 1, path, name);
    if (entry.end < entry.begin || entry.end - entry.begin != bytes)
        MESHLM_INVALID(path, ": tensor '", name, "' ", entry.shape.str(), " needs ", bytes,
                       " bytes but its data_offsets span ", offsets.dump());
    if (entry.end > data_size)
        MESHLM_INVALID(path, ": tensor '", name, "' ends at byte ", entry.end,
                       " but the data section has ", data_size, " bytes (truncated file?)");
    return entry;
}

}  // namespace

SafetensorsFile::SafetensorsFile(const std::string& path) : path_(path) {
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in) MESHLM_INVALID("cannot open safetensors file ", path);
    std::streamsize size = in.tellg();
    in.seekg(0);
    bytes_.resize(static_cast<std::size_t>(size));
    in.read(bytes_.data(), size);
    if (size < 8) MESHLM_INVALID(path, ": not a safetensors file (", size, " bytes)");
    std::uint64_t n = 0;
    std::memcpy(&n, bytes_.data(), 8);
    if (n > 100'000'000 || 8 + n > static_cast<std::uint64_t>(size))
        MESHLM_INVALID(path, ": header length ", n, " does not fit the file (", size,
                       " bytes): truncated or not safetensors");
    data_start_ = 8 + n;
    nlohmann::json header;
    try {
        header = nlohmann::json::parse(bytes_.begin() + 8, bytes_.begin() + 8 + n);
    } catch (const std::exception& e) {
        MESHLM_INVALID(path, ": header is not valid JSON: ", e.what());
    }
    if (!header.is_object()) MESHLM_INVALID(path, ": header is not a JSON object");
    const std::size_t data_size = bytes_.size() - data_start_;
    std::vector<std::pair<std::size_t, std::size_t>> ranges;
    for (auto it = header.begin(); it != header.end(); ++it) {
        if (it.key() == "__metadata__") {
            if (!it->is_object())
                MESHLM_INVALID(path, ": __metadata__ is ", it->type_name(), ", not an object");
            for (auto m = it->begin(); m != it->end(); ++m)
                metadata_[m.key()] = m->is_string() ? m->get<std::string>() : m->dump();
            continue;
        }
        const SafetensorsEntry entry = parse_entry(*it, path, it.key(), data_size);
        ranges.push_back({entry.begin, entry.end});
        entries_[it.key()] = entry;
    }
    std::sort(ranges.begin(), ranges.end());
    std::size_t pos = 0;
    for (auto [b, e] : ranges) {
        if (b != pos) MESHLM_INVALID(path, ": tensor data is not contiguous at byte ", pos);
        pos = e;
    }
    if (pos != data_size)
        MESHLM_INVALID(path, ": ", data_size - pos, " trailing bytes after the last tensor");
}

const SafetensorsEntry& SafetensorsFile::entry(const std::string& name) const {
    auto it = entries_.find(name);
    if (it == entries_.end()) MESHLM_INVALID(path_, ": no tensor named '", name, "'");
    return it->second;
}

std::vector<std::string> SafetensorsFile::names() const {
    std::vector<std::string> out;
    for (const auto& kv : entries_) out.push_back(kv.first);
    return out;
}

std::vector<float> SafetensorsFile::f32(const std::string& name, const Shape* expect) const {
    const SafetensorsEntry& e = entry(name);
    if (e.dtype != DType::f32)
        MESHLM_INVALID(path_, ": tensor '", name, "' is ", dtype_name(e.dtype), ", expected f32");
    if (expect && !(e.shape == *expect))
        MESHLM_INVALID(path_, ": tensor '", name, "' has shape ", e.shape.str(), ", expected ",
                       expect->str());
    std::vector<float> out(e.shape.numel());
    std::memcpy(out.data(), bytes_.data() + data_start_ + e.begin, e.end - e.begin);
    return out;
}

std::vector<std::int32_t> SafetensorsFile::i32(const std::string& name) const {
    const SafetensorsEntry& e = entry(name);
    if (e.dtype != DType::i32)
        MESHLM_INVALID(path_, ": tensor '", name, "' is ", dtype_name(e.dtype), ", expected i32");
    std::vector<std::int32_t> out(e.shape.numel());
    std::memcpy(out.data(), bytes_.data() + data_start_ + e.begin, e.end - e.begin);
    return out;
}

const void* SafetensorsFile::data(const std::string& name) const {
    return bytes_.data() + data_start_ + entry(name).begin;
}

SafetensorsPlan plan_safetensors(const std::vector<SafetensorsTensor>& tensors,
                                 const std::map<std::string, std::string>& metadata) {
    nlohmann::ordered_json header;
    if (!metadata.empty()) header["__metadata__"] = metadata;
    std::size_t offset = 0;
    for (const auto& t : tensors) {
        std::size_t bytes = t.shape.numel() * dtype_size(t.dtype);
        nlohmann::ordered_json shape = nlohmann::ordered_json::array();
        for (int i = 0; i < t.shape.ndim; ++i) shape.push_back(t.shape[i]);
        header[t.name] = {{"dtype", dtype_tag(t.dtype)},
                          {"shape", shape},
                          {"data_offsets", {offset, offset + bytes}}};
        offset += bytes;
    }
    std::string text = header.dump();
    text.append((8 - text.size() % 8) % 8, ' ');  // 8-byte alignment of the data section
    SafetensorsPlan plan;
    const std::uint64_t n = text.size();
    plan.head.assign(reinterpret_cast<const char*>(&n), 8);
    plan.head += text;
    std::size_t at = plan.head.size();
    for (const auto& t : tensors) {
        plan.offsets.push_back(at);
        at += t.shape.numel() * dtype_size(t.dtype);
    }
    plan.size = at;
    return plan;
}

void write_safetensors(const std::string& path, const std::vector<SafetensorsTensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
    const SafetensorsPlan plan = plan_safetensors(tensors, metadata);
    AtomicFile out(path);
    out.write(plan.head.data(), plan.head.size());
    for (const auto& t : tensors) out.write(t.data, t.shape.numel() * dtype_size(t.dtype));
    out.commit();
}

}  // namespace meshlm
