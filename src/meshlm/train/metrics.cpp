#include "meshlm/train/metrics.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>

#include "meshlm/core/atomic_file.h"
#include "meshlm/core/error.h"

namespace meshlm {

std::string exact_float(double v) {
    if (!std::isfinite(v)) return std::isnan(v) ? "NaN" : (v > 0 ? "Infinity" : "-Infinity");
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.9g", v);
    return buf;
}

std::string metrics_json(const StepMetrics& m) {
    std::string s = "{\"step\": " + std::to_string(m.step);
    auto field = [&](const char* key, auto& v, bool exact) {
        if (!v) return;
        char buf[32];
        if (!std::isfinite(static_cast<double>(*v)))  // a bad step (train.nan_policy): JSON null
            s += std::string(", \"") + key + "\": null";
        else if (exact)
            s += std::string(", \"") + key + "\": " + exact_float(*v);
        else {
            std::snprintf(buf, sizeof buf, "%.6g", static_cast<double>(*v));
            s += std::string(", \"") + key + "\": " + buf;
        }
    };
    field("loss", m.loss, true);
    field("lr", m.lr, true);
    field("grad_norm", m.grad_norm, true);
    field("tokens_per_s", m.tokens_per_s, false);
    field("mfu", m.mfu, false);
    field("val_loss", m.val_loss, true);
    if (m.comm_bytes) s += ", \"comm_bytes\": " + std::to_string(*m.comm_bytes);
    if (m.seq_len) s += ", \"seq_len\": " + std::to_string(*m.seq_len);
    if (m.fault) s += ", \"fault\": \"" + *m.fault + "\"";
    if (m.skipped_steps) s += ", \"skipped_steps\": " + std::to_string(*m.skipped_steps);
    if (m.rolled_back_to) s += ", \"rolled_back_to\": " + std::to_string(*m.rolled_back_to);
    field("gns", m.gns, false);
    field("gns_grad_sq", m.gns_grad_sq, false);
    field("gns_noise", m.gns_noise, false);
    for (const auto& [key, values] : {std::pair{"coord", &m.coord},
                                      {"update", &m.update},
                                      {"vq", &m.vq},
                                      {"act_rms", &m.act_rms},
                                      {"update_ratio", &m.update_ratio}}) {
        if (values->empty()) continue;
        s += std::string(", \"") + key + "\": {";
        for (std::size_t i = 0; i < values->size(); ++i) {
            char buf[48];
            std::snprintf(buf, sizeof buf, "%.9g", (*values)[i].second);
            s += (i ? ", \"" : "\"") + (*values)[i].first + "\": " + buf;
        }
        s += "}";
    }
    // Last, so that the lines of earlier versions are prefixes of today's.
    if (m.tokens) s += ", \"tokens\": " + std::to_string(*m.tokens);
    if (m.wall_time) s += ", \"time\": \"" + iso_utc_time(*m.wall_time) + "\"";
    return s + "}";
}

std::string iso_utc_time(double unix_seconds) {
    const double whole = std::floor(unix_seconds);
    const std::time_t t = static_cast<std::time_t>(whole);
    int ms = static_cast<int>(std::lround((unix_seconds - whole) * 1000));
    std::tm tm{};
    gmtime_r(&t, &tm);
    char date[32], buf[48];
    std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm);
    std::snprintf(buf, sizeof buf, "%s.%03dZ", date, std::min(ms, 999));
    return buf;
}

double unix_now() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

MetricsWriter::MetricsWriter(const std::string& path, long keep_through_step) : f_(nullptr) {
    std::string kept;
    if (keep_through_step >= 0) {
        std::ifstream in(path);
        std::string line;
        while (std::getline(in, line)) {
            const auto at = line.find("\"step\":");
            if (at != std::string::npos && std::atol(line.c_str() + at + 7) <= keep_through_step)
                kept += line + "\n";
        }
        write_file_atomic(path, kept);
    }
    f_ = std::fopen(path.c_str(), keep_through_step >= 0 ? "a" : "w");
    if (!f_) MESHLM_INVALID("cannot write ", path, ": ", std::strerror(errno));
}

MetricsWriter::~MetricsWriter() {
    std::fclose(f_);
}

void MetricsWriter::write(const StepMetrics& m) {
    std::string line = metrics_json(m) + "\n";
    std::fwrite(line.data(), 1, line.size(), f_);
    std::fflush(f_);
}

}  // namespace meshlm
