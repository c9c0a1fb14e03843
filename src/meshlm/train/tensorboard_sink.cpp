#include "meshlm/train/tensorboard_sink.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "meshlm/core/atomic_file.h"
#include "meshlm/core/error.h"
#include "meshlm/data/hf/utf8.h"
#include "meshlm/io/tensorboard_event.h"
#include "meshlm/io/tfrecord.h"
#include "meshlm/train/metrics.h"

namespace fs = std::filesystem;

namespace meshlm {
namespace {

constexpr const char* kPrefix = "events.out.tfevents.";

std::string read_bytes(const fs::path& p) {
    std::FILE* f = std::fopen(p.c_str(), "rb");
    if (!f) MESHLM_INVALID("cannot read ", p.string(), ": ", std::strerror(errno));
    std::string s;
    char buf[1 << 16];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) s.append(buf, n);
    std::fclose(f);
    return s;
}

// events.out.tfevents.<unix seconds>.<host>, with .1, .2, ... where a file of that second
// exists (a resume right after a stop): names sort in the order they were written, which is
// the order TensorBoard reads a directory's files in.
std::string new_event_file(const std::string& dir, double now) {
    char host[256] = "localhost";
    gethostname(host, sizeof host - 1);
    const std::string base =
        dir + "/" + kPrefix + std::to_string(static_cast<long long>(now)) + "." + host;
    std::string path = base;
    for (int n = 1; fs::exists(path); ++n) path = base + "." + std::to_string(n);
    return path;
}

// TensorBoard's scalars of one record: its metrics.jsonl keys, nested ones as "group/name".
std::vector<std::pair<std::string, float>> scalars_of(const StepMetrics& m) {
    std::vector<std::pair<std::string, float>> v;
    auto add = [&](const char* tag, const auto& x) {
        if (x) v.emplace_back(tag, static_cast<float>(*x));
    };
    add("loss", m.loss);
    add("lr", m.lr);
    add("grad_norm", m.grad_norm);
    add("tokens_per_s", m.tokens_per_s);
    add("mfu", m.mfu);
    add("val_loss", m.val_loss);
    add("comm_bytes", m.comm_bytes);
    add("seq_len", m.seq_len);
    add("skipped_steps", m.skipped_steps);
    add("gns", m.gns);
    add("gns_grad_sq", m.gns_grad_sq);
    add("gns_noise", m.gns_noise);
    for (const auto& [group, values] : {std::pair{"coord/", &m.coord},
                                        {"update/", &m.update},
                                        {"vq/", &m.vq},
                                        {"act_rms/", &m.act_rms},
                                        {"update_ratio/", &m.update_ratio}})
        for (const auto& [name, x] : *values) v.emplace_back(group + name, static_cast<float>(x));
    return v;
}

}  // namespace

void truncate_tensorboard_events(const std::string& dir, long step) {
    if (!fs::is_directory(dir)) return;
    for (const auto& entry : fs::directory_iterator(dir)) {
        const std::string name = entry.path().filename().string();
        if (name.rfind(kPrefix, 0) != 0 || name.find(".tmp.") != std::string::npos) continue;
        const std::string bytes = read_bytes(entry.path());
        const auto records = tfrecord_records(bytes, entry.path().string());
        std::string kept;
        for (const auto& r : records)
            if (tb_event_step(r) <= step) kept += tfrecord_frame(r);
        if (kept.size() != bytes.size()) write_file_atomic(entry.path().string(), kept);
    }
}

TensorBoardSink::TensorBoardSink(const std::string& dir, long keep_through_step) {
    if (keep_through_step >= 0) truncate_tensorboard_events(dir, keep_through_step);
    fs::create_directories(dir);
    const double now = unix_now();
    path_ = new_event_file(dir, now);
    f_ = std::fopen(path_.c_str(), "wb");
    if (!f_) MESHLM_INVALID("cannot write ", path_, ": ", std::strerror(errno));
    append(tb_file_version_event(now));
}

TensorBoardSink::~TensorBoardSink() {
    std::fclose(f_);
}

void TensorBoardSink::record(const StepMetrics& m) {
    const auto values = scalars_of(m);
    if (!values.empty()) append(tb_scalars_event(m.wall_time.value_or(unix_now()), m.step, values));
}

namespace {

// TensorBoard's text plugin decodes UTF-8 strictly; a byte-level model's sample need not be
// valid: each invalid byte becomes U+FFFD.
std::string valid_utf8(const std::string& text) {
    std::string out;
    hf::for_each_char(text, [&](char32_t c, std::size_t) {
        hf::append_utf8(hf::is_invalid_byte(c) ? U'\uFFFD' : c, out);
    });
    return out;
}

}  // namespace

void TensorBoardSink::text(long step, const std::string& tag, const std::string& text) {
    append(tb_text_event(unix_now(), step, tag, valid_utf8(text)));
}

void TensorBoardSink::append(const std::string& event) {
    const std::string r = tfrecord_frame(event);
    std::fwrite(r.data(), 1, r.size(), f_);
    std::fflush(f_);  // TensorBoard shows a run as it trains
}

}  // namespace meshlm
