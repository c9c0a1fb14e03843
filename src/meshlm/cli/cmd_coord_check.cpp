// meshlm coord-check [--config FILE] [--widths 64,128,256,512,1024] [--steps 5] --out DIR
//                    [--force] [--config.section.key=value ...]
//
// muP's coordinate check (seed 002, microsoft/mup): the config's model is trained at each width
// for a few steps on the config's data (head width, depth and MLP ratio kept; heads, key/value
// heads and d_ff scale with the width), recording the mean |activation| at every site of every
// block and the output logits, and mean |update| / lr per tensor, at every step
// (train.coord_interval = 1). Each width's run lands in DIR/width-W; DIR gets coord.csv (width,
// step, site, layer, value; layer -1 = the mean over the blocks), updates.csv (width, step,
// tensor, value), a terminal summary (each site at the last step across widths, and the spread
// max/min), and coord.svg / coord.png (one panel per site averaged over the blocks).
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "meshlm/cli/commands.h"
#include "meshlm/cli/config.h"
#include "meshlm/cli/coord_plot.h"
#include "meshlm/core/error.h"
#include "meshlm/data/data_source.h"
#include "meshlm/model/coord_stats.h"
#include "meshlm/train/trainer.h"

namespace fs = std::filesystem;

namespace meshlm {
namespace {

struct CoordArgs {
    std::string config, widths = "64,128,256,512,1024", out;
    int steps = 5;
    bool force = false;
};

std::vector<int> parse_widths(const std::string& text) {
    std::vector<int> out;
    std::stringstream in(text);
    for (std::string item; std::getline(in, item, ',');) {
        try {
            std::size_t used = 0;
            const int w = std::stoi(item, &used);
            if (used == item.size() && w > 0) {
                out.push_back(w);
                continue;
            }
        } catch (const std::exception&) {
        }
        MESHLM_INVALID("--widths: '", item, "' is not a positive width (e.g. 64,128,256)");
    }
    if (out.size() < 2 || !std::is_sorted(out.begin(), out.end()))
        MESHLM_INVALID("--widths needs at least two widths in increasing order (got '", text, "')");
    return out;
}

// The config's model at width w: the head width, depth and MLP ratio stay.
Config at_width(Config c, int w) {
    ModelConfig& m = c.model;
    const int d = m.head_dim();
    if (w % d != 0)
        MESHLM_INVALID("--widths: ", w, " is not a multiple of the head width ", d,
                       " (model.d_model / model.n_head), which the check keeps fixed");
    const int heads = w / d;
    if (m.n_kv_head > 0) {
        if ((heads * m.n_kv_head) % m.n_head != 0)
            MESHLM_INVALID("--widths: ", w, " gives ", heads, " heads, which do not keep the ",
                           m.n_head, ":", m.n_kv_head, " query to key/value head ratio");
        m.n_kv_head = heads * m.n_kv_head / m.n_head;
    }
    if (m.d_ff > 0) m.d_ff = static_cast<int>(static_cast<long>(m.d_ff) * w / m.d_model);
    m.n_head = heads, m.d_model = w;
    return c;
}

struct Record {  // one width's metrics: step -> (site or tensor -> value)
    std::map<int, std::map<std::string, double>> coord, update;
};

Record read_records(const std::string& path) {
    Record r;
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);) {
        const auto j = nlohmann::json::parse(line);
        if (!j.contains("coord")) continue;
        const int step = j.at("step");
        for (const auto& [k, v] : j.at("coord").items()) r.coord[step][k] = v.get<double>();
        for (const auto& [k, v] : j.at("update").items()) r.update[step][k] = v.get<double>();
    }
    return r;
}

// The site of "h.<l>.<site>" (or "logits") and its layer (-1 for logits).
std::pair<std::string, int> split_site(const std::string& key) {
    if (key.rfind("h.", 0) != 0) return {key, -1};
    const auto dot = key.find('.', 2);
    return {key.substr(dot + 1), std::stoi(key.substr(2, dot - 2))};
}

// The run at width w: a.steps steps recording every step's coordinates (train.coord_interval 1)
// into a.out/width-w, without evals, samples, checkpoints or init_from.
TrainJob width_job(const Config& base, int w, const CoordArgs& a, Comm& world) {
    Config c = at_width(base, w);
    c.train.steps = a.steps, c.train.coord_interval = 1;
    c.log.dir = a.out + "/width-" + std::to_string(w);
    c.log.interval = a.steps, c.log.eval_interval = 0, c.log.sample_tokens = 0;
    c.checkpoint.interval = 0, c.checkpoint.resume = "none";
    c.train.final_eval_batches = 1;
    c.model.init_from.clear();
    TrainJob job;
    job.model = c.model, job.data = c.data, job.train = c.train, job.optim = c.optim;
    job.log = c.log, job.checkpoint = c.checkpoint, job.parallel = c.parallel;
    job.world = &world;
    job.run_dir = c.log.dir;
    job.replace_run = true;
    job.resolved_yaml = config_to_yaml(c);
    Config shown = c;
    shown.data.cache_dir = data_cache_root(c.data);
    job.resolved_summary = config_summary(shown);
    return job;
}

// Trains every width in turn; rank 0 returns each width's metrics, the others nothing.
std::vector<Record> train_widths(const Config& base, const std::vector<int>& widths,
                                 const CoordArgs& a, Comm& world) {
    const bool rank0 = world.rank() == 0;
    std::vector<Record> records;
    for (int w : widths) {
        const TrainJob job = width_job(base, w, a, world);
        if (rank0) std::cout << "coord-check: width " << w << "\n" << std::flush;
        std::ostringstream quiet;
        run_training(job, quiet);
        if (rank0) records.push_back(read_records(job.run_dir + "/metrics.jsonl"));
    }
    return records;
}

using SiteMeans = std::map<std::string, std::vector<std::vector<double>>>;  // [step][width]

// Writes out/coord.csv (every site of every block, and each site's mean over the blocks) and
// out/updates.csv; returns each site's mean over the blocks (and the logits).
SiteMeans write_csvs(const std::string& out, const std::vector<int>& widths,
                     const std::vector<int>& steps, const std::vector<std::string>& sites,
                     std::vector<Record>& records) {
    std::ofstream csv(out + "/coord.csv"), ucsv(out + "/updates.csv");
    csv << "width,step,site,layer,value\n";
    ucsv << "width,step,tensor,value\n";
    csv << std::setprecision(9), ucsv << std::setprecision(9);
    SiteMeans mean;
    for (const auto& s : sites)
        mean[s].assign(steps.size(), std::vector<double>(widths.size(), 0.0));
    for (std::size_t wi = 0; wi < widths.size(); ++wi)
        for (std::size_t si = 0; si < steps.size(); ++si) {
            std::map<std::string, std::pair<double, int>> acc;
            for (const auto& [key, v] : records[wi].coord[steps[si]]) {
                const auto [site, layer] = split_site(key);
                csv << widths[wi] << "," << steps[si] << "," << site << "," << layer << "," << v
                    << "\n";
                acc[site].first += v, acc[site].second += 1;
            }
            for (const auto& [site, sn] : acc) {
                mean[site][si][wi] = sn.first / sn.second;
                if (site != "logits")
                    csv << widths[wi] << "," << steps[si] << "," << site << ",-1,"
                        << mean[site][si][wi] << "\n";
            }
            for (const auto& [key, v] : records[wi].update[steps[si]])
                ucsv << widths[wi] << "," << steps[si] << "," << key << "," << v << "\n";
        }
    return mean;
}

// Prints each site at the last step across the widths and the spread max/min; returns the
// panels to plot, one per site this model has.
std::vector<CoordSeries> print_summary(const std::vector<int>& widths,
                                       const std::vector<int>& steps,
                                       const std::vector<std::string>& sites,
                                       const SiteMeans& mean) {
    std::vector<CoordSeries> panels;
    std::cout << "coord-check: mean |activation| at step " << steps.back()
              << " (blocks averaged); spread = max / min across widths\n";
    std::cout << std::left << std::setw(8) << "site";
    for (int w : widths) std::cout << std::right << std::setw(11) << w;
    std::cout << std::right << std::setw(9) << "spread"
              << "\n";
    for (const auto& s : sites) {
        const auto& last = mean.at(s).back();
        double lo = 1e300, hi = 0;
        for (double v : last)
            if (v > 0) lo = std::min(lo, v), hi = std::max(hi, v);
        if (hi <= 0) continue;  // a site this model does not have (no rotary: aqr, akr)
        panels.push_back({s, mean.at(s)});
        std::cout << std::left << std::setw(8) << s << std::right;
        for (double v : last) std::cout << std::setw(11) << std::setprecision(4) << v;
        std::cout << std::setw(8) << std::setprecision(3) << hi / lo << "x\n";
    }
    return panels;
}

}  // namespace

CommandRunner add_coord_check_command(CLI::App& app, const std::vector<std::string>& overrides,
                                      Comm& world) {
    auto* cmd = app.add_subcommand(
        "coord-check", "muP coordinate check: activation scales across widths over a few steps");
    auto a = std::make_shared<CoordArgs>();
    cmd->add_option("--config", a->config, "YAML config (default: the built-in default)");
    cmd->add_option("--widths", a->widths, "comma-separated model widths, increasing")
        ->capture_default_str();
    cmd->add_option("--steps", a->steps, "training steps per width")
        ->check(CLI::PositiveNumber)
        ->capture_default_str();
    cmd->add_option("--out", a->out, "output directory")->required();
    cmd->add_flag("--force", a->force, "replace an existing output directory");
    return [a, &overrides, &world] {
        const std::vector<int> widths = parse_widths(a->widths);
        const Config base = load_config(a->config, overrides);
        if (fs::exists(a->out) && !fs::is_empty(a->out) && !a->force)
            MESHLM_INVALID(a->out, " exists and is not empty: give another --out or --force");
        std::vector<Record> records = train_widths(base, widths, *a, world);
        if (world.rank() != 0) return 0;

        // Means over the blocks per site (and the logits), in site order.
        std::vector<std::string> sites;
        for (int s = 0; s < kCoordSites; ++s) sites.push_back(coord_site_name(s));
        sites.push_back("logits");
        std::vector<int> steps;
        for (const auto& [step, _] : records.front().coord) steps.push_back(step);
        const SiteMeans mean = write_csvs(a->out, widths, steps, sites, records);
        const std::vector<CoordSeries> panels = print_summary(widths, steps, sites, mean);
        const bool mup = base.model.mup_enabled;
        draw_coord_check(a->out + "/coord",
                         std::string(mup ? "muP" : "standard parameterization") + ", optim " +
                             base.optim.mup_rule + " rule, lr " + std::to_string(base.optim.lr),
                         widths, steps, panels);
        std::cout << "wrote " << a->out << "/coord.csv, updates.csv, coord.svg, coord.png\n";
        return 0;
    };
}

}  // namespace meshlm
