#include "meshlm/train/trace_files.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "meshlm/core/atomic_file.h"
#include "meshlm/core/error.h"

namespace meshlm {
namespace {

bool switch_on(bool on) {
    if (on) trace_set_enabled(true);
    return on;
}

std::string rank_file(const std::string& run_dir, int rank) {
    return run_dir + "/trace/rank_" + std::to_string(rank) + ".json";
}

// A whole Chrome trace file around events joined by ",\n".
std::string trace_file(const std::string& events) {
    return "{\"traceEvents\": [\n" + events + "\n], \"displayTimeUnit\": \"ms\"}\n";
}

// The events of a file trace_file() wrote.
std::string events_of(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream buf;
    buf << in.rdbuf();
    const std::string text = buf.str();
    const std::string head = trace_file("").substr(0, trace_file("").find('\n') + 1);
    const auto end = text.rfind("\n]");
    MESHLM_CHECK(in && text.starts_with(head) && end != std::string::npos && end >= head.size(),
                 "cannot read the trace events of ", path);
    return text.substr(head.size(), end - head.size());
}

}  // namespace

TracedStep::TracedStep(const StepRange& window, long step)
    : on_(switch_on(window.contains(step))), scope_("step", step) {}

TracedStep::~TracedStep() {
    if (on_) trace_set_enabled(false);
}

void write_trace_files(Comm& world, const std::string& run_dir, const StepRange& window,
                       std::ostream& out) {
    if (window.empty()) return;
    const std::vector<TraceEvent> events = trace_events();
    std::filesystem::create_directories(run_dir + "/trace");
    write_file_atomic(rank_file(run_dir, world.rank()),
                      trace_file(trace_json_events(events, world.rank())));
    trace_clear();
    world.barrier();  // every rank's file is complete
    if (world.rank() != 0) return;
    std::string merged;
    for (int r = 0; r < world.size(); ++r)
        merged += (r ? ",\n" : "") + events_of(rank_file(run_dir, r));
    write_file_atomic(run_dir + "/trace.json", trace_file(merged));
    out << "trace of steps " << window.first << "-" << window.last << ": " << run_dir
        << "/trace.json (" << world.size() << (world.size() > 1 ? " ranks, " : " rank, ")
        << "one file per rank in " << run_dir << "/trace/)\n";
}

}  // namespace meshlm
