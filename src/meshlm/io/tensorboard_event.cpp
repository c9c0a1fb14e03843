#include "meshlm/io/tensorboard_event.h"

#include <cstring>

#include "meshlm/core/error.h"

namespace meshlm {
namespace {

// Protocol buffer wire types.
enum Wire : std::uint32_t { varint = 0, fixed64 = 1, length_delimited = 2, fixed32 = 5 };

// Appends fields to one message: tag = field number << 3 | wire type, then the payload.
class ProtoWriter {
  public:
    ProtoWriter& varint_field(std::uint32_t field, std::uint64_t v) {
        put_varint(field << 3 | Wire::varint);
        put_varint(v);
        return *this;
    }
    ProtoWriter& double_field(std::uint32_t field, double v) {
        std::uint64_t bits;
        std::memcpy(&bits, &v, 8);
        put_varint(field << 3 | Wire::fixed64);
        put_le(bits, 8);
        return *this;
    }
    ProtoWriter& float_field(std::uint32_t field, float v) {
        std::uint32_t bits;
        std::memcpy(&bits, &v, 4);
        put_varint(field << 3 | Wire::fixed32);
        put_le(bits, 4);
        return *this;
    }
    // A string, bytes or embedded message.
    ProtoWriter& bytes_field(std::uint32_t field, std::string_view bytes) {
        put_varint(field << 3 | Wire::length_delimited);
        put_varint(bytes.size());
        out_.append(bytes);
        return *this;
    }
    const std::string& bytes() const { return out_; }

  private:
    void put_varint(std::uint64_t v) {
        for (; v >= 0x80; v >>= 7) out_ += static_cast<char>((v & 0x7F) | 0x80);
        out_ += static_cast<char>(v);
    }
    void put_le(std::uint64_t v, int n) {
        for (int i = 0; i < n; ++i) out_ += static_cast<char>(v >> (8 * i));
    }
    std::string out_;
};

// Event: wall_time = 1 (double), step = 2 (int64), file_version = 3, summary = 5.
std::string event(double wall_time, std::int64_t step) {
    return ProtoWriter()
        .double_field(1, wall_time)
        .varint_field(2, static_cast<std::uint64_t>(step))
        .bytes();
}

std::uint64_t read_varint(std::string_view s, std::size_t& at) {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (at >= s.size()) MESHLM_INVALID("a TensorBoard event ends inside a varint");
        const auto b = static_cast<unsigned char>(s[at++]);
        v |= std::uint64_t(b & 0x7F) << shift;
        if (!(b & 0x80)) return v;
    }
    MESHLM_INVALID("a TensorBoard event has a varint longer than 10 bytes");
}

}  // namespace

std::string tb_file_version_event(double wall_time) {
    return event(wall_time, 0) + ProtoWriter().bytes_field(3, "brain.Event:2").bytes();
}

std::string tb_scalars_event(double wall_time, std::int64_t step,
                             const std::vector<std::pair<std::string, float>>& values) {
    ProtoWriter summary;                 // Summary: repeated Value value = 1
    for (const auto& [tag, v] : values)  // Value: tag = 1, simple_value = 2
        summary.bytes_field(1, ProtoWriter().bytes_field(1, tag).float_field(2, v).bytes());
    return event(wall_time, step) + ProtoWriter().bytes_field(5, summary.bytes()).bytes();
}

std::string tb_text_event(double wall_time, std::int64_t step, const std::string& tag,
                          const std::string& text) {
    // TensorProto: dtype = 1 (DT_STRING = 7), tensor_shape = 2 (empty: a scalar),
    // string_val = 8.
    const std::string tensor =
        ProtoWriter().varint_field(1, 7).bytes_field(2, "").bytes_field(8, text).bytes();
    // SummaryMetadata: plugin_data = 1 (PluginData: plugin_name = 1).
    const std::string metadata =
        ProtoWriter().bytes_field(1, ProtoWriter().bytes_field(1, "text").bytes()).bytes();
    // Value: tag = 1, tensor = 8, metadata = 9.
    const std::string value =
        ProtoWriter().bytes_field(1, tag).bytes_field(8, tensor).bytes_field(9, metadata).bytes();
    return event(wall_time, step) +
           ProtoWriter().bytes_field(5, ProtoWriter().bytes_field(1, value).bytes()).bytes();
}

std::int64_t tb_event_step(std::string_view e) {
    std::int64_t step = 0;
    for (std::size_t at = 0; at < e.size();) {
        const std::uint64_t key = read_varint(e, at);
        std::uint64_t skip = 0;
        switch (key & 7) {
            case Wire::varint: {
                const std::uint64_t v = read_varint(e, at);
                if (key >> 3 == 2) step = static_cast<std::int64_t>(v);
                break;
            }
            case Wire::fixed64:
                skip = 8;
                break;
            case Wire::fixed32:
                skip = 4;
                break;
            case Wire::length_delimited:
                skip = read_varint(e, at);
                break;
            default:
                MESHLM_INVALID("a TensorBoard event has wire type ", key & 7);
        }
        if (skip > e.size() - at) MESHLM_INVALID("a TensorBoard event's field runs past its end");
        at += skip;
    }
    return step;
}

}  // namespace meshlm
