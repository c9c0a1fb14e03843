#include "meshlm/train/run_end.h"

#include <cstdint>
#include <cstdio>
#include <map>
#include <ostream>

#include "meshlm/core/buffer.h"
#include "meshlm/core/memory_usage.h"
#include "meshlm/io/weights.h"
#include "meshlm/parallel/rank_activity.h"
#include "meshlm/train/final_weights.h"

namespace meshlm {

void finish_run(const TrainJob& job, const DeviceMesh& mesh, Learner& learner,
                WeightAverage& average, const Tokenizer& tokenizer, MetricSinks& sinks,
                std::ostream& out) {
    Comm& world = mesh.world();
    const long steps = job.train.steps;
    // Before the final weights are written: what the training steps needed.
    std::int64_t rss = static_cast<std::int64_t>(peak_rss_bytes());
    if (world.size() > 1) world.all_reduce_max(&rss, 1);
    char rss_line[96];
    std::snprintf(rss_line, sizeof rss_line, "peak RSS during training%s: %.0f MiB\n",
                  world.size() > 1 ? " (largest rank)" : "", static_cast<double>(rss) / 1048576);
    out << rss_line;
    const std::string path = job.run_dir + "/model.safetensors";
    const std::map<std::string, std::string> meta = {{"format", "meshlm"},
                                                     {"step", std::to_string(steps)}};
    out << average.write_weights(job.run_dir, meta);
    if (world.size() == 1) {
        const float* params = learner.full_params();
        save_weights(path, learner.full_layout(), params, meta);
        out << "saved " << path << "\n";
        if (job.on_finish) sinks.text(steps, "sample", job.on_finish(params, tokenizer));
        return;
    }
    // Every rank writes its chunk in place: no rank gathers the model.
    set_activity_phase("final weights write");
    write_final_weights(mesh, learner, job.model, path, meta);
    out << "saved " << path << " (written by all " << world.size() << " ranks)\n";
    if (world.rank() == 0 && job.on_finish) {  // the sample: rank 0 reads the model back
        Buffer<float> w(learner.full_layout().total());
        load_weights(path, learner.full_layout(), w.data());
        sinks.text(steps, "sample", job.on_finish(w.data(), tokenizer));
    }
    world.barrier();
}

}  // namespace meshlm
