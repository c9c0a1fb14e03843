// TensorBoard's `Event` protocol buffer (tensorboard/compat/proto/event.proto, summary.proto,
// tensor.proto), encoded by hand: a file-version event, scalar summaries and text summaries
// (a string tensor under the "text" plugin), each one TFRecord of an event file (tfrecord.h).
// No libprotobuf: the messages are a few fixed shapes, and a generated-code dependency (protoc
// at build time, a runtime library matched to it) would outweigh a 100-line writer.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace meshlm {

// The first event of every file: file_version "brain.Event:2".
std::string tb_file_version_event(double wall_time);
// A Summary of scalars (tag, value) at `step`.
std::string tb_scalars_event(double wall_time, std::int64_t step,
                             const std::vector<std::pair<std::string, float>>& values);
// A text summary (the text plugin's string tensor, shape []) at `step`.
std::string tb_text_event(double wall_time, std::int64_t step, const std::string& tag,
                          const std::string& text);
// The step field of an encoded Event (0 when absent, as protobuf reads it); throws InvalidInput
// on bytes that are no protocol buffer.
std::int64_t tb_event_step(std::string_view event);

}  // namespace meshlm
