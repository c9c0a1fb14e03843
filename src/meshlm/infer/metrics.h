// Serving metrics in the Prometheus text format (version 0.0.4): counters, gauges and
// histograms with fixed buckets, all updated under one mutex (a few updates per request or
// decode pass, never per element).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace meshlm {

class Metrics {
  public:
    Metrics();
    // name: counter name without the _total suffix; labels: `key="value"` pairs, or "".
    void add(const std::string& name, double v, const std::string& labels = "");
    void set(const std::string& name, double v);
    void observe(const std::string& name, double v);
    double counter(const std::string& name, const std::string& labels = "") const;
    double gauge(const std::string& name) const;
    std::string render() const;

  private:
    struct Histogram {
        std::vector<double> bounds;
        std::vector<std::uint64_t> counts;  // per bucket (not cumulative); last = +Inf
        double sum = 0;
        std::uint64_t count = 0;
    };
    mutable std::mutex mu_;
    std::map<std::string, std::string> help_;
    std::map<std::string, std::map<std::string, double>> counters_;
    std::map<std::string, double> gauges_;
    std::map<std::string, Histogram> histograms_;
};

}  // namespace meshlm
