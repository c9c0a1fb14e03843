#include "meshlm/train/validation.h"

#include <unistd.h>

#include "meshlm/core/trace.h"
#include "meshlm/parallel/rank_activity.h"
#include "meshlm/train/progress.h"

namespace meshlm {

Validation::Validation(const TrainJob& job, const TrainData& data, Learner& learner, Comm& dp,
                       std::ostream& out)
    : job_(job), data_(data), learner_(learner), dp_(dp), out_(out) {
    writer_ = !job.world || job.world->rank() == 0;
    live_ = writer_ && ::isatty(STDOUT_FILENO);
    if (data.synthetic()) return;
    LoaderOptions opt = data.options;
    opt.shuffle = false;
    const auto val = DataLoader::open_split(data.dir, "val", opt);
    const std::uint64_t global = static_cast<std::uint64_t>(job.train.batch_size) * dp.size();
    split_batches_ = static_cast<long>((val->rows_left_in_epoch() + global - 1) / global);
}

std::uint64_t Validation::batch_tokens() const {
    return static_cast<std::uint64_t>(job_.train.batch_size) * job_.train.seq_len * dp_.size();
}

EvalResult Validation::run(long max_batches, std::int32_t* tokens, std::int32_t* targets,
                           const char* what) {
    ActivityPhase phase(what);
    TraceScope trace(what);
    LoaderOptions opt = data_.options;
    opt.shuffle = false;
    auto val = DataLoader::open_split(data_.dir, "val", opt);
    auto losses = [&](const std::int32_t* tk, const std::int32_t* tg, int rows, int t) {
        return learner_.eval_losses(tk, tg, rows, t);
    };
    ProgressLine line(out_, what, live_);
    auto progress = [&](long done, long total) {
        if (writer_) line.update(done, total, "batches");
    };
    const int B = job_.train.batch_size, T = job_.train.seq_len, W = dp_.size();
    EvalResult r = evaluate(losses, *val, B, T, max_batches, data_.token_bytes, tokens, targets,
                            dp_.rank(), W, progress);
    line.finish();
    if (W > 1) {
        std::int64_t counts[2] = {static_cast<std::int64_t>(r.tokens),
                                  static_cast<std::int64_t>(r.bytes)};
        dp_.all_reduce_sum(&r.loss_sum, 1);
        dp_.all_reduce_sum(counts, 2);
        r.tokens = static_cast<std::uint64_t>(counts[0]);
        r.bytes = static_cast<std::uint64_t>(counts[1]);
    }
    return r;
}

}  // namespace meshlm
