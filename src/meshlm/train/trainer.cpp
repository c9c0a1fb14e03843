#include "meshlm/train/trainer.h"

#include <sched.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>
#include <ostream>

#include "meshlm/core/error.h"
#include "meshlm/core/rng.h"
#include "meshlm/data/text_corpus.h"
#include "meshlm/infer/sampler.h"
#include "meshlm/io/atomic_file.h"
#include "meshlm/io/weights.h"
#include "meshlm/kernels/kernels.h"
#include "meshlm/model/flops.h"
#include "meshlm/train/learner.h"
#include "meshlm/train/metrics.h"

namespace meshlm {
namespace {

using Clock = std::chrono::steady_clock;

std::string human_bytes(double b) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (b >= 1024 && u < 4) b /= 1024, ++u;
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f %s", b, units[u]);
    return buf;
}

std::string human_count(double n) {
    char buf[32];
    if (n >= 1e9)
        std::snprintf(buf, sizeof buf, "%.2fB", n / 1e9);
    else if (n >= 1e6)
        std::snprintf(buf, sizeof buf, "%.2fM", n / 1e6);
    else if (n >= 1e3)
        std::snprintf(buf, sizeof buf, "%.1fk", n / 1e3);
    else
        std::snprintf(buf, sizeof buf, "%.0f", n);
    return buf;
}

// Mean loss over the validation stream's windows (the first max_batches batches, 0 = all).
float evaluate(Learner& learner, const std::vector<std::int32_t>& stream, int B, int T,
               int max_batches, std::vector<std::int32_t>& tokens,
               std::vector<std::int32_t>& targets) {
    const std::size_t windows = window_count(stream, T);
    std::size_t batches = (windows + B - 1) / B;
    if (max_batches > 0 && batches > static_cast<std::size_t>(max_batches)) batches = max_batches;
    double sum = 0;
    std::size_t count = 0;
    for (std::size_t b = 0; b < batches; ++b) {
        int rows = static_cast<int>(std::min<std::size_t>(B, windows - b * B));
        for (int r = 0; r < rows; ++r)
            fill_window(stream, b * B + r, T, tokens.data() + r * T, targets.data() + r * T);
        float loss =
            learner.model().forward(learner.params(), tokens.data(), targets.data(), rows, T, 0.f);
        sum += static_cast<double>(loss) * rows;
        count += rows;
    }
    return count ? static_cast<float>(sum / count) : std::numeric_limits<float>::quiet_NaN();
}

}  // namespace

int available_cpus() {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
    return 1;
}

TrainResult run_training(const TrainJob& job, std::ostream& out) {
    const TrainConfig& tc = job.train;
    const int B = tc.batch_size, T = tc.seq_len, accum = tc.grad_accum;
    const int threads = tc.threads > 0 ? tc.threads : available_cpus();
    kernels::set_threads(threads);

    out << "resolved config:\n" << job.resolved_yaml << "\n";
    std::filesystem::create_directories(job.run_dir);
    write_file_atomic(job.run_dir + "/config.yaml", job.resolved_yaml);

    auto tokenizer = make_tokenizer(job.data.tokenizer);
    if (tokenizer->vocab_size() > job.model.vocab_size)
        MESHLM_INVALID("tokenizer '", tokenizer->name(), "' has ", tokenizer->vocab_size(),
                       " tokens but model.vocab_size is ", job.model.vocab_size);
    Corpus corpus;
    if (!job.data.synthetic) {
        corpus = build_corpus(job.data, *tokenizer);
        out << "data: " << job.data.path << ": " << corpus.train_docs + corpus.val_docs
            << " documents, " << human_bytes(corpus.bytes) << "; train " << corpus.train_docs
            << " docs / " << corpus.train.size() << " tokens, validation " << corpus.val_docs
            << " docs / " << corpus.val.size() << " tokens\n";
        if (corpus.train.size() <= static_cast<std::size_t>(T) + 1)
            MESHLM_INVALID("the training split has ", corpus.train.size(),
                           " tokens, fewer than one window of train.seq_len + 1 = ", T + 1);
    } else {
        out << "data: synthetic (uniformly random tokens)\n";
    }

    Learner learner(job.model, job.optim, B, T, tc.steps);
    learner.init_params(tc.seed);
    const double flops_per_token = train_flops_per_token(job.model, learner.layout(), T);
    const double peak = tc.peak_gflops > 0 ? tc.peak_gflops : kernels::measure_peak_gflops(threads);
    out << "model: " << human_count(static_cast<double>(learner.layout().count()))
        << " parameters ("
        << human_count(static_cast<double>(nonembedding_params(learner.layout())))
        << " non-embedding), " << human_count(flops_per_token) << " training FLOPs/token\n"
        << "memory: parameters " << human_bytes(learner.param_bytes()) << ", gradients "
        << human_bytes(learner.grad_bytes()) << ", optimizer "
        << human_bytes(learner.optimizer_bytes()) << ", activations "
        << human_bytes(learner.activation_bytes()) << "\n"
        << "threads: " << threads << ", fp32 peak " << static_cast<int>(peak) << " GFLOP/s"
        << (tc.peak_gflops > 0 ? " (train.peak_gflops)" : " (measured)") << "\n"
        << "run directory: " << job.run_dir << "\n";
    out.flush();

    MetricsWriter metrics(job.run_dir + "/metrics.jsonl");
    const std::size_t per_micro = static_cast<std::size_t>(B) * T;
    std::vector<std::int32_t> tokens(per_micro * accum), targets(per_micro * accum);
    TrainResult result;
    result.final_val_loss = std::numeric_limits<float>::quiet_NaN();
    auto interval_start = Clock::now();
    long interval_tokens = 0;
    for (long step = 0; step < tc.steps; ++step) {
        // The batch is a function of (seed, step) only, never of what ran before.
        Philox rng(tc.seed, 0xDA7A0000ull + static_cast<std::uint64_t>(step));
        for (int m = 0; m < accum; ++m) {
            if (job.data.synthetic)
                random_tokens(B, T, job.model.vocab_size, rng, tokens.data() + m * per_micro,
                              targets.data() + m * per_micro);
            else
                sample_windows(corpus.train, B, T, rng, tokens.data() + m * per_micro,
                               targets.data() + m * per_micro);
        }
        StepStats st = learner.train_step(tokens.data(), targets.data(), accum);
        if (!std::isfinite(st.loss))
            MESHLM_INVALID("training diverged at step ", step + 1, " (loss ", st.loss,
                           "); lower optim.lr or enable optim.grad_clip");
        interval_tokens += static_cast<long>(per_micro) * accum;
        result.final_loss = st.loss;

        const long done = step + 1;
        const bool last = done == tc.steps;
        const bool log_now = done % job.log.interval == 0 || last;
        const bool eval_now =
            !job.data.synthetic &&
            ((job.log.eval_interval > 0 && done % job.log.eval_interval == 0) || last);
        if (!log_now && !eval_now) continue;
        StepMetrics m;
        m.step = done;
        if (log_now) {
            double secs = std::chrono::duration<double>(Clock::now() - interval_start).count();
            double tps = interval_tokens / secs;
            m.loss = st.loss, m.lr = st.lr, m.grad_norm = st.grad_norm;
            m.tokens_per_s = tps;
            m.mfu = tps * flops_per_token / (peak * 1e9);
            char line[256];
            std::snprintf(
                line, sizeof line,
                "step %6ld/%ld | loss %.4f | lr %.3e | grad_norm %.3f | %s tok/s | mfu %.1f%%",
                done, static_cast<long>(tc.steps), st.loss, st.lr, st.grad_norm,
                human_count(tps).c_str(), 100 * *m.mfu);
            out << line << "\n";
        }
        if (eval_now) {
            float val =
                evaluate(learner, corpus.val, B, T, last ? 0 : tc.eval_batches, tokens, targets);
            m.val_loss = val;
            result.final_val_loss = val;
            char line[128];
            std::snprintf(line, sizeof line, "step %6ld/%ld | val_loss %.4f (%.3f bits/byte)", done,
                          static_cast<long>(tc.steps), val, val / std::log(2.0));
            out << line << "\n";
        }
        out.flush();
        metrics.write(m);
        interval_start = Clock::now();
        interval_tokens = 0;
    }

    save_weights(job.run_dir + "/model.safetensors", learner.layout(), learner.params(),
                 {{"format", "meshlm"}, {"step", std::to_string(tc.steps)}});
    out << "saved " << job.run_dir << "/model.safetensors\n";

    if (job.log.sample_tokens > 0) {
        GPT2 sampler_model(job.model, 1, job.model.max_seq_len);
        SamplingOptions opt;
        opt.max_new_tokens = job.log.sample_tokens;
        opt.seed = tc.seed;
        auto prompt = tokenizer->encode(job.log.sample_prompt);
        auto ids = generate(sampler_model, learner.params(), prompt, tokenizer->eot_id(), opt);
        out << "sample:\n" << job.log.sample_prompt << tokenizer->decode(ids) << "\n";
    }
    return result;
}

}  // namespace meshlm
