// meshlm plot RUN... --metric loss,val_loss --out FILE.svg|png [--log-x] [--log-y]
// [--size WxH]: the runs' metrics.jsonl side by side, one panel per metric (run_plot.h).
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "meshlm/cli/commands.h"
#include "meshlm/cli/overrides.h"
#include "meshlm/cli/run_plot.h"
#include "meshlm/core/error.h"

namespace fs = std::filesystem;

namespace meshlm {
namespace {

struct PlotArgs {
    std::vector<std::string> runs;
    std::string metrics, out, size = "900x500";
    bool log_x = false, log_y = false;
};

// A run's metrics: name -> (step, value) by step. The names are metrics.jsonl's numeric keys
// ("step", "tokens" and "time" aside), nested objects as "group/name" (as in TensorBoard).
std::map<std::string, Curve> read_run(const std::string& run) {
    if (!fs::is_directory(run)) MESHLM_INVALID("meshlm plot: no run directory ", run);
    const std::string path = run + "/metrics.jsonl";
    std::ifstream in(path);
    if (!in) MESHLM_INVALID("meshlm plot: ", run, " has no metrics.jsonl (not a training run?)");
    std::map<std::string, Curve> out;
    std::size_t n = 0;
    for (std::string line; std::getline(in, line);) {
        ++n;
        nlohmann::json j;
        try {
            j = nlohmann::json::parse(line);
        } catch (const nlohmann::json::exception& e) {
            MESHLM_INVALID(path, " line ", n, " is not JSON: ", e.what());
        }
        if (!j.contains("step") || !j["step"].is_number()) continue;
        const double step = j["step"];
        for (const auto& [k, v] : j.items()) {
            if (v.is_number() && k != "step" && k != "tokens") out[k].emplace_back(step, v);
            if (v.is_object())
                for (const auto& [name, x] : v.items())
                    if (x.is_number()) out[k + "/" + name].emplace_back(step, x);
        }
    }
    return out;
}

std::vector<std::string> split_list(const std::string& s) {
    std::vector<std::string> out;
    std::stringstream ss(s);
    for (std::string item; std::getline(ss, item, ',');)
        if (!item.empty()) out.push_back(item);
    return out;
}

// The legend's names: each run's directory name, or its path where two share a name.
std::vector<std::string> run_names(const std::vector<std::string>& runs) {
    std::vector<std::string> names;
    std::multiset<std::string> seen;
    for (const auto& r : runs) seen.insert(fs::path(r).lexically_normal().filename().string());
    for (const auto& r : runs) {
        std::string n = fs::path(r).lexically_normal().filename().string();
        names.push_back(n.empty() || seen.count(n) > 1 ? r : n);
    }
    return names;
}

RunPlot make_plot(const PlotArgs& a) {
    const std::string out = a.out;
    const std::string ext = fs::path(out).extension().string();
    if (ext != ".svg" && ext != ".png")
        MESHLM_INVALID("meshlm plot: --out ", out, " must end in .svg or .png");
    RunPlot p;
    if (std::sscanf(a.size.c_str(), "%dx%d", &p.width, &p.height) != 2 || p.width < 100 ||
        p.height < 100 || p.width > 20000 || p.height > 20000)
        MESHLM_INVALID("meshlm plot: --size ", a.size,
                       " is not WIDTHxHEIGHT in pixels (100 to 20000)");
    p.metrics = split_list(a.metrics);
    if (p.metrics.empty()) MESHLM_INVALID("meshlm plot: --metric names no metric");
    p.log_x = a.log_x, p.log_y = a.log_y;
    p.runs = run_names(a.runs);
    p.curves.assign(p.metrics.size(), std::vector<Curve>(a.runs.size()));
    for (std::size_t r = 0; r < a.runs.size(); ++r) {
        auto metrics = read_run(a.runs[r]);
        for (std::size_t m = 0; m < p.metrics.size(); ++m) {
            const auto it = metrics.find(p.metrics[m]);
            if (it != metrics.end()) {
                p.curves[m][r] = it->second;
                continue;
            }
            std::string have;
            for (const auto& [name, _] : metrics) have += (have.empty() ? "" : ", ") + name;
            MESHLM_INVALID(
                "meshlm plot: ", a.runs[r], " has no metric '", p.metrics[m],
                "'; its metrics: ", have.empty() ? "none (metrics.jsonl is empty)" : have);
        }
    }
    return p;
}

}  // namespace

CommandRunner add_plot_command(CLI::App& app, const std::vector<std::string>& overrides) {
    auto* cmd = app.add_subcommand("plot", "Plot runs' metrics side by side (SVG or PNG)");
    auto a = std::make_shared<PlotArgs>();
    cmd->add_option("runs", a->runs, "run directories (each with its metrics.jsonl)")->required();
    cmd->add_option("--metric", a->metrics,
                    "comma-separated metrics, one panel each (loss, val_loss, lr, grad_norm, "
                    "tokens_per_s, mfu, vq/commit, ...)")
        ->default_val("loss");
    cmd->add_option("--out", a->out, "the picture: FILE.svg or FILE.png")->required();
    cmd->add_option("--size", a->size, "picture size in pixels, WIDTHxHEIGHT")
        ->default_val("900x500");
    cmd->add_flag("--log-x", a->log_x, "logarithmic step axis");
    cmd->add_flag("--log-y", a->log_y, "logarithmic value axes");
    return [a, &overrides] {
        require_used_overrides(overrides, "meshlm plot", {});
        const RunPlot p = make_plot(*a);
        draw_run_plot(a->out, p);
        std::cout << "wrote " << a->out << " (" << p.metrics.size() << " panel"
                  << (p.metrics.size() > 1 ? "s" : "") << ", " << p.runs.size() << " run"
                  << (p.runs.size() > 1 ? "s" : "") << ")\n";
        return 0;
    };
}

}  // namespace meshlm
