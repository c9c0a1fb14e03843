#include "meshlm/infer/metrics.h"

#include <cstdio>
#include <sstream>

namespace meshlm {
namespace {
std::string num(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return buf;
}
}  // namespace

Metrics::Metrics() {
    help_ = {
        {"meshlm_requests", "HTTP requests answered, by endpoint and status code"},
        {"meshlm_prompt_tokens", "prompt tokens processed"},
        {"meshlm_generation_tokens", "tokens generated"},
        {"meshlm_sequences_finished", "sequences finished, by reason"},
        {"meshlm_queue_depth", "sequences waiting for a slot in the batch"},
        {"meshlm_running_sequences", "sequences in the running batch"},
        {"meshlm_kv_blocks_used", "KV cache blocks held by sequences"},
        {"meshlm_kv_blocks_total", "KV cache blocks in the pool"},
        {"meshlm_batch_rows", "rows (tokens) per forward pass"},
        {"meshlm_batch_sequences", "sequences per forward pass"},
        {"meshlm_request_latency_seconds", "time from request to last byte of a completion"},
        {"meshlm_time_to_first_token_seconds", "time from request to its first generated token"},
        {"meshlm_step_seconds", "time of one forward pass with its sampling"},
        {"meshlm_http_idle_connections", "connections waiting for their next request"},
        {"meshlm_http_open_connections", "connections open (waiting, read or answered)"},
        {"meshlm_http_worker_threads", "threads reading or answering requests"},
    };
    auto hist = [&](const std::string& name, std::vector<double> b) {
        Histogram h;
        h.bounds = std::move(b);
        h.counts.assign(h.bounds.size() + 1, 0);
        histograms_[name] = h;
    };
    const std::vector<double> seconds = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                         1,     2.5,  5,     10,   30,  60};
    hist("meshlm_request_latency_seconds", seconds);
    hist("meshlm_time_to_first_token_seconds", seconds);
    hist("meshlm_step_seconds", {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1});
    hist("meshlm_batch_rows", {1, 2, 4, 8, 16, 32, 64, 128, 256, 512});
    hist("meshlm_batch_sequences", {1, 2, 4, 8, 16, 32, 64, 128});
    for (const char* g : {"meshlm_queue_depth", "meshlm_running_sequences", "meshlm_kv_blocks_used",
                          "meshlm_kv_blocks_total"})
        gauges_[g] = 0;
    for (const char* c : {"meshlm_prompt_tokens", "meshlm_generation_tokens"}) counters_[c][""] = 0;
}

void Metrics::add(const std::string& name, double v, const std::string& labels) {
    std::lock_guard<std::mutex> lock(mu_);
    counters_[name][labels] += v;
}

void Metrics::set(const std::string& name, double v) {
    std::lock_guard<std::mutex> lock(mu_);
    gauges_[name] = v;
}

void Metrics::observe(const std::string& name, double v) {
    std::lock_guard<std::mutex> lock(mu_);
    Histogram& h = histograms_[name];
    std::size_t b = 0;
    while (b < h.bounds.size() && v > h.bounds[b]) ++b;
    if (h.counts.size() != h.bounds.size() + 1) h.counts.assign(h.bounds.size() + 1, 0);
    ++h.counts[b];
    h.sum += v;
    ++h.count;
}

double Metrics::counter(const std::string& name, const std::string& labels) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = counters_.find(name);
    if (it == counters_.end()) return 0;
    auto jt = it->second.find(labels);
    return jt == it->second.end() ? 0 : jt->second;
}

double Metrics::gauge(const std::string& name) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = gauges_.find(name);
    return it == gauges_.end() ? 0 : it->second;
}

std::string Metrics::render() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::ostringstream out;
    auto head = [&](const std::string& name, const char* type) {
        auto it = help_.find(name);
        if (it != help_.end()) out << "# HELP " << name << " " << it->second << "\n";
        out << "# TYPE " << name << " " << type << "\n";
    };
    for (const auto& [name, series] : counters_) {
        head(name, "counter");
        for (const auto& [labels, v] : series)
            out << name << "_total" << (labels.empty() ? "" : "{" + labels + "}") << " " << num(v)
                << "\n";
    }
    for (const auto& [name, v] : gauges_) {
        head(name, "gauge");
        out << name << " " << num(v) << "\n";
    }
    for (const auto& [name, h] : histograms_) {
        head(name, "histogram");
        std::uint64_t cum = 0;
        for (std::size_t b = 0; b < h.bounds.size(); ++b) {
            cum += h.counts[b];
            out << name << "_bucket{le=\"" << num(h.bounds[b]) << "\"} " << cum << "\n";
        }
        out << name << "_bucket{le=\"+Inf\"} " << h.count << "\n";
        out << name << "_sum " << num(h.sum) << "\n" << name << "_count " << h.count << "\n";
    }
    return out.str();
}

}  // namespace meshlm
