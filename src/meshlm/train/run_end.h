// The end of a run that trained to train.steps: the peak memory its steps needed, the final
// weights (RUN_DIR/model.safetensors: one process writes them whole, several ranks each their
// part in place) and the sample job.on_finish makes of them.
//
// exports: finish_run
#pragma once

#include <iosfwd>

#include "meshlm/data/tokenizer.h"
#include "meshlm/parallel/mesh.h"
#include "meshlm/train/learner.h"
#include "meshlm/train/metric_sink.h"
#include "meshlm/train/trainer.h"
#include "meshlm/train/weight_average.h"

namespace meshlm {

// Collective over mesh.world(); the sample goes to `sinks` (rank 0's).
// `average`: RUN_DIR/model.avg.safetensors (train.average), written beside the final weights.
void finish_run(const TrainJob& job, const DeviceMesh& mesh, Learner& learner,
                WeightAverage& average, const Tokenizer& tokenizer, MetricSinks& sinks,
                std::ostream& out);

}  // namespace meshlm
