#include "meshlm/train/trainer.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <iomanip>
#include <limits>
#include <optional>
#include <ostream>

#include "meshlm/core/atomic_file.h"
#include "meshlm/core/error.h"
#include "meshlm/core/launch_command.h"
#include "meshlm/core/memory_usage.h"
#include "meshlm/core/rng.h"
#include "meshlm/core/threads.h"
#include "meshlm/data/data_source.h"
#include "meshlm/data/loader.h"
#include "meshlm/data/prepare.h"
#include "meshlm/data/synthetic.h"
#include "meshlm/io/weights.h"
#include "meshlm/kernels/device.h"
#include "meshlm/kernels/ops/bf16.h"
#include "meshlm/kernels/ops/gemm.h"
#include "meshlm/kernels/ops/machine.h"
#include "meshlm/kernels/ops/run_device.h"
#include "meshlm/model/flops.h"
#include "meshlm/parallel/device_comm.h"
#include "meshlm/parallel/fault.h"
#include "meshlm/parallel/local_comm.h"
#include "meshlm/parallel/mesh.h"
#include "meshlm/parallel/rank_activity.h"
#include "meshlm/parallel/threads.h"
#include "meshlm/train/all_ranks.h"
#include "meshlm/train/checkpoint.h"
#include "meshlm/train/checkpoint_failure.h"
#include "meshlm/train/chunked_losses.h"
#include "meshlm/train/console_sink.h"
#include "meshlm/train/evaluate.h"
#include "meshlm/train/final_weights.h"
#include "meshlm/train/init_from.h"
#include "meshlm/train/jsonl_sink.h"
#include "meshlm/train/learner.h"
#include "meshlm/train/metric_sink.h"
#include "meshlm/train/metrics.h"
#include "meshlm/train/nan_policy.h"
#include "meshlm/train/progress.h"
#include "meshlm/train/run_owner.h"
#include "meshlm/train/seq_warmup.h"
#include "meshlm/train/sharded_checkpoint.h"
#include "meshlm/train/stop_signal.h"
#include "meshlm/train/tensorboard_sink.h"
#include "meshlm/train/weight_average.h"

namespace meshlm {
namespace {

using Clock = std::chrono::steady_clock;

// The coordinate check of the step just taken: every rank's sums added up (world), then means.
void coord_check_metrics(const Learner& learner, Comm& world, StepMetrics& m) {
    const CoordStats& c = learner.coord();
    const std::vector<double>& u = learner.update_sums();
    std::vector<double> all(c.sum);
    all.insert(all.end(), c.count.begin(), c.count.end());
    all.insert(all.end(), u.begin(), u.end());
    if (world.size() > 1) world.all_reduce_sum(all.data(), all.size());
    const std::size_t n = c.sum.size(), t = u.size() / 2;
    for (std::size_t i = 0; i < n; ++i)
        if (all[n + i] > 0) m.coord.emplace_back(c.name(i), all[i] / all[n + i]);
    const auto& slices = learner.layout().slices();
    for (std::size_t i = 0; i < t; ++i)
        if (all[2 * n + t + i] > 0)
            m.update.emplace_back(slices[i].name, all[2 * n + i] / all[2 * n + t + i]);
}

// The peak for MFU: the best of a few short probes, of the FMA (fp32) or of the bf16 dot
// product (bf16 where the CPU has it; widened bf16 GEMMs run at the fp32 rate, so they get the
// FMA peak). One probe reads low whenever something else runs on the same cores for a moment
// (117 to 233 GFLOP/s were seen on the same two threads); the best of several is the machine's
// peak far more often.
double robust_peak_gflops(int threads, bool bf16_dot) {
    double best = 0;
    for (int i = 0; i < 5; ++i)
        best = std::max(best, bf16_dot ? ops::measure_peak_bf16_gflops(threads, 0.05)
                                       : ops::measure_peak_gflops(threads, 0.05));
    return best;
}

// Seconds per call of a GEMM of the block's shapes in fp32 and with bf16 operands (best of a
// few): what bf16 costs on a CPU that has to widen its operands.
std::pair<double, double> gemm_seconds_fp32_bf16(int rows, int width) {
    const std::size_t n = static_cast<std::size_t>(rows) * width, w = std::size_t(width) * width;
    std::vector<float> a(n, 0.5f), b(w, 0.25f), c(n);
    std::vector<std::uint16_t> a16(n), b16(w);
    const Device cpu = Device::cpu;
    const Tensor av = view(a.data(), {rows, width}, cpu), bv = view(b.data(), {width, width}, cpu);
    const Tensor a16v = view(a16.data(), av.shape, cpu), b16v = view(b16.data(), bv.shape, cpu);
    const Tensor cv = view(c.data(), av.shape, cpu);
    auto best = [](auto&& f) {
        double t = 1e30;
        for (int i = 0; i < 4; ++i) {
            const auto t0 = std::chrono::steady_clock::now();
            f();
            t = std::min(
                t, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        }
        return t;
    };
    const double fp32 = best([&] { ops::gemm(cv, av, false, bv, true, 1.f, 0.f); });
    const double bf16 = best([&] {
        ops::to_bf16(a16v, av);
        ops::to_bf16(b16v, bv);
        ops::gemm(cv, a16v, false, b16v, true, 1.f, 0.f);
    });
    return {fp32, bf16};
}

// What to type to continue a run stopped by a signal: the same launch, with this binary's real
// path (any launch resumes it; this one continues exactly).
std::string resume_command(int ranks, const std::string& run_dir) {
    return relaunch_command(ranks, "train --resume " + shell_quote(run_dir));
}

// train.threads, or the CPUs of this rank (shared with the ranks on its CPUs). Unlike sample and
// serve, training does not leave busy CPUs to other processes by itself: its sums, and so its
// losses and weights, depend on the thread count, which must not change with the load of the
// moment. The short OpenMP spin (core/omp_wait_policy.h) keeps the extra thread from costing
// more than it brings; the run says so and how to choose.
int training_threads(const TrainConfig& tc, Comm& world, std::ostream& out) {
    if (tc.threads > 0) {
        set_thread_count(tc.threads);
        return tc.threads;
    }
    if (world.size() > 1) {
        set_thread_count(threads_per_rank(world));
        return thread_count();
    }
    const int cpus = available_cpus(), free = cpus_free_of_other_work(cpus);
    if (free < cpus)
        out << "note: " << cpus - free << " of " << cpus
            << " CPUs busy with other processes; training keeps " << cpus
            << " threads, since its losses depend on the thread count (--config.train.threads="
            << free << " to leave them alone)\n";
    set_thread_count(cpus);
    return cpus;
}

}  // namespace

std::string run_tokenizer_copy(const std::string& run_dir, const std::string& spec) {
    return run_dir + "/" + std::filesystem::path(spec).filename().string();
}

TrainResult run_training(const TrainJob& job, std::ostream& rank0_out) {
    const TrainConfig& tc = job.train;
    // B is the micro-batch of one data-parallel rank; a step trains on B * accum * W rows.
    const int B = tc.batch_size, T = tc.seq_len, accum = tc.grad_accum;
    LocalComm local;
    Comm& world = job.world ? *job.world : local;
    DeviceMesh mesh(world, job.parallel.data, job.parallel.model);
    // Data comes by the mesh's data index: the model ranks of one replica train on the same rows.
    Comm& dp = mesh.data_comm();
    const int W = dp.size(), dp_rank = dp.rank(), M = mesh.model_size();
    // Before anything is written.
    std::string gpu_gap =
        Learner::device_gap(job.model, job.optim, Device::cuda, W, M, job.parallel.zero_stage);
    if (gpu_gap.empty() && tc.coord_interval > 0)
        gpu_gap = "train.coord_interval: the coordinate check reads its updates on the host";
    const Device device =
        kernels::resolve_run_device(tc.device, "train.device", gpu_gap, world.rank());
    const bool gpu = device != Device::cpu;
    // Several ranks on GPUs: the learner's collectives go over NCCL (a mesh of NcclComms whose
    // host() twins carry its scalars); the trainer's own (data, checkpoints, stop flags) stay on
    // the host mesh.
    const std::unique_ptr<Comm> device_world = make_device_world(world, device);
    std::optional<DeviceMesh> device_mesh;
    if (device_world) device_mesh.emplace(*device_world, job.parallel.data, job.parallel.model);
    const DeviceMesh& learner_mesh = device_mesh ? *device_mesh : mesh;
    const bool writer = world.rank() == 0;  // prints and owns the run directory
    std::ostream silent(nullptr);
    std::ostream& out = writer ? rank0_out : silent;
    const int threads = training_threads(tc, world, out);

    // A checkpoint to resume from is verified (sizes, checksums) before anything is written.
    std::optional<TrainerState> resume;
    if (!job.resume_from.empty()) {
        resume = read_checkpoint(job.resume_from);
        if (resume->seed != tc.seed)
            MESHLM_INVALID("train.seed is ", tc.seed, " but the checkpoint ", job.resume_from,
                           " was trained with seed ", resume->seed,
                           "; an exact resume needs the same seed");
    }
    // Whether the run directory may be written: rank 0 looks (the others could look only after
    // it has begun writing) and tells every rank.
    std::optional<std::string> refused;
    if (writer)
        refused = capture([&] {
            if (resume)
                check_resume_target(job.run_dir, job.resume_from, resume->run_id);
            else if (!job.replace_run)
                check_run_dir_free(job.run_dir, job.model.init_from);
        });
    fault_point(world.rank(), "train_start");
    throw_if_any_failed(world, refused, "");
    TrainResult result;
    result.final_val_loss = std::numeric_limits<float>::quiet_NaN();
    if (resume && resume->step >= tc.steps) {
        // A finished run: nothing is trained, saved or sampled.
        out << job.resume_from << " is at step " << resume->step << " and train.steps is "
            << tc.steps << ": nothing left to train, nothing changed (raise train.steps with "
            << "--config.train.steps=N to train on)\n";
        result.last_checkpoint = job.resume_from;
        result.nothing_to_do = true;
        return result;
    }
    const std::string run_id = resume ? resume->run_id : new_run_id();
    out << "resolved config: (every key: " << job.run_dir << "/config.yaml)\n"
        << (job.resolved_summary.empty() ? job.resolved_yaml : job.resolved_summary);
    auto tokenizer = make_tokenizer(job.data.tokenizer);
    if (tokenizer->vocab_size() > job.model.vocab_size)
        MESHLM_INVALID("tokenizer '", tokenizer->name(), "' has ", tokenizer->vocab_size(),
                       " tokens but model.vocab_size is ", job.model.vocab_size);
    // Text comes from a prepared directory (prepared into the cache first for raw inputs).
    std::string data_dir;
    std::unique_ptr<DataLoader> train_data;
    LoaderOptions train_opt;
    train_opt.packing = parse_packing(job.data.packing);
    train_opt.seq_len = T;
    train_opt.seed = tc.seed;
    if (!job.data.synthetic) {
        // Rank 0 prepares raw inputs into the cache first; the others then find them there.
        if (!writer) world.barrier();
        data_dir = resolve_prepared_data(job.data, *tokenizer, out);
        if (writer && world.size() > 1) world.barrier();
        PreparedMeta meta = read_prepared_meta(data_dir);
        train_data = DataLoader::open_split(data_dir, "train", train_opt);
        if (train_data->vocab_size() > job.model.vocab_size)
            MESHLM_INVALID("the data in ", data_dir, " has a vocabulary of ",
                           train_data->vocab_size(), " but model.vocab_size is ",
                           job.model.vocab_size);
        out << "data: " << data_dir << " (" << meta.tokenizer_name << " tokens): train "
            << meta.splits["train"].documents << " docs / " << meta.splits["train"].tokens
            << " tokens, validation " << meta.splits["val"].documents << " docs / "
            << meta.splits["val"].tokens << " tokens; packing " << job.data.packing << "\n";
        if (train_data->units_per_epoch() == 0)
            MESHLM_INVALID("the training split of ", data_dir, " has no ",
                           job.data.packing == "pad" ? "document of two tokens or more"
                                                     : "window of train.seq_len + 1 tokens",
                           " (", meta.splits["train"].tokens, " tokens)");
        if (resume) {
            if (resume->loader.is_null())
                MESHLM_INVALID("the checkpoint ", job.resume_from,
                               " was written by a run on synthetic data; resume it with "
                               "data.synthetic=true");
            train_data->restore(resume->loader);
        }
    } else {
        out << "data: synthetic (uniformly random tokens)\n";
    }
    const auto token_bytes = token_byte_lengths(*tokenizer, job.model.vocab_size);

    const Precision precision = parse_precision(tc.precision);
    // model.vq.update_len: a batch of T-token rows trains as n_update chunks of U tokens, one
    // optimizer step each, the VQ attention state carried from chunk to chunk (the seed's
    // truncated backpropagation). Activations are planned for a chunk, not a whole row.
    const int U = job.model.chunk_len(T);
    Learner learner(job.model, job.optim, B, U, tc.steps, &learner_mesh.data_comm(),
                    job.parallel.zero_stage, &learner_mesh.model_comm(),
                    parse_recompute(tc.recompute), precision, device);
    long start_step = 0;
    std::uint64_t tokens_seen = 0;
    std::optional<double> best_val;
    if (resume) {
        // A sharded checkpoint of this mesh: each rank reads its own shard; anything else goes
        // through the single-process layout.
        const bool own_shards =
            load_learner_checkpoint(job.resume_from, *resume, job.model, learner, mesh);
        if (learner.step() != resume->step)
            MESHLM_INVALID(job.resume_from, ": optimizer step ", learner.step(),
                           " differs from trainer.json's step ", resume->step);
        start_step = resume->step;
        tokens_seen = resume->tokens_seen;
        best_val = resume->best_val;
        out << "resuming from " << job.resume_from << " (step " << start_step << ", "
            << human_count(static_cast<double>(tokens_seen)) << " tokens seen"
            << (own_shards ? "; each rank read its own shard" : "") << ")\n";
    } else if (!job.model.init_from.empty()) {
        const std::string from = load_init_weights(
            job.model.init_from, job.model, learner.full_layout(), learner.full_params_buffer());
        learner.full_params_written();
        out << "initialized weights from " << from << " (fresh optimizer and schedule)\n";
    } else {
        learner.init_params(tc.seed);
    }
    WeightAverage average(tc, job.model, mesh, learner);  // train.average
    if (resume) out << average.restore(job.resume_from);

    // Inputs are valid: only now does the run directory appear (replacing an old run when
    // asked to).
    if (writer && !resume && job.replace_run && holds_run(job.run_dir)) {
        if (job.restart_run)
            out << "checkpoint.resume=auto: " << job.run_dir
                << " holds this run, stopped before its first checkpoint: starting it again "
                   "(its old files are removed)"
                << std::endl;  // a preempted job's log keeps this line even if killed again
        else
            out << "--force: removing the run in " << job.run_dir << "\n";
        remove_run(job.run_dir);
    }
    if (writer) std::filesystem::create_directories(job.run_dir);
    if (writer && job.on_run_dir) job.on_run_dir(job.run_dir, resume.has_value());
    if (writer) write_file_atomic(job.run_dir + "/config.yaml", job.resolved_yaml);
    if (writer && std::filesystem::is_regular_file(job.data.tokenizer)) {
        const std::string copy = run_tokenizer_copy(job.run_dir, job.data.tokenizer);
        if (std::filesystem::absolute(copy) != std::filesystem::absolute(job.data.tokenizer)) {
            std::filesystem::copy_file(job.data.tokenizer, copy + ".tmp",
                                       std::filesystem::copy_options::overwrite_existing);
            std::filesystem::rename(copy + ".tmp", copy);
        }
    }
    // A fresh, unshuffled loader per evaluation: every pass scores the same rows. Data-parallel
    // ranks score their rows of each global batch and sum the results.
    // Progress lines go to a terminal live, to a log every 10 s.
    const bool live = writer && ::isatty(STDOUT_FILENO);
    auto evaluate_val = [&](long max_batches, std::int32_t* tok, std::int32_t* tgt,
                            const char* what) {
        ActivityPhase phase(what);
        LoaderOptions opt = train_opt;
        opt.shuffle = false;
        auto val = DataLoader::open_split(data_dir, "val", opt);
        auto losses = [&](const std::int32_t* tk, const std::int32_t* tg, int rows, int t) {
            return learner.eval_losses(tk, tg, rows, t);
        };
        ProgressLine line(out, what, live);
        auto progress = [&](long done, long total) {
            if (writer) line.update(done, total, "batches");
        };
        EvalResult r =
            evaluate(losses, *val, B, T, max_batches, token_bytes, tok, tgt, dp_rank, W, progress);
        line.finish();
        if (W > 1) {
            std::int64_t counts[2] = {static_cast<std::int64_t>(r.tokens),
                                      static_cast<std::int64_t>(r.bytes)};
            dp.all_reduce_sum(&r.loss_sum, 1);
            dp.all_reduce_sum(counts, 2);
            r.tokens = static_cast<std::uint64_t>(counts[0]);
            r.bytes = static_cast<std::uint64_t>(counts[1]);
        }
        return r;
    };
    const double flops_per_token = train_flops_per_token(job.model, learner.full_layout(), T);
    const bool bf16_dot = precision == Precision::bf16 && ops::native_bf16();
    // On a GPU the CPU's probes say nothing: MFU only against train.peak_gflops there.
    const double peak = tc.peak_gflops > 0 ? tc.peak_gflops
                        : gpu              ? 0.0
                                           : robust_peak_gflops(threads, bf16_dot);
    out << "model: " << human_count(static_cast<double>(learner.full_layout().count()))
        << " parameters ("
        << human_count(static_cast<double>(nonembedding_params(learner.full_layout())))
        << " non-embedding), " << human_count(flops_per_token) << " training FLOPs/token\n"
        << "memory" << (world.size() > 1 ? " per rank" : "") << ": parameters "
        << human_bytes(learner.param_bytes()) << ", gradients " << human_bytes(learner.grad_bytes())
        << ", optimizer " << human_bytes(learner.optimizer_bytes()) << ", activations "
        << human_bytes(learner.activation_bytes());
    if (tc.recompute != "none") out << " (recompute: " << tc.recompute << ")";
    if (learner.working_bytes() > 0)
        out << ", " << zero_working_label(learner.plan()) << " "
            << human_bytes(learner.working_bytes());
    out << "\n";
    if (M > 1)
        out << "tensor parallel: " << M << " model ranks per replica, " << W
            << " replicas; each rank holds " << learner.layout().count() << " of "
            << learner.full_layout().count() << " parameters\n";
    if (world.size() > 1) {
        // Exact bytes, for tests and for comparing with `meshlm info`.
        out << "data parallel: " << W << " ranks, ZeRO stage " << job.parallel.zero_stage
            << ", micro-batch " << B << " x accum " << accum << " x " << W
            << " ranks per step; allocated per rank (bytes): params " << learner.param_bytes()
            << " grads " << learner.grad_bytes() << " optimizer " << learner.optimizer_bytes()
            << " working " << learner.working_bytes() << "\n";
    }
    if (gpu)
        out << "device: " << kernels::device_name(device) << " (GPU "
            << world.rank() % kernels::cuda_device_count() << " of " << kernels::cuda_device_count()
            << " visible" << (device_world ? ", one per rank; collectives over NCCL" : "")
            << "); parameters, gradients, optimizer state and activations in GPU memory\n";
    out << "threads: " << threads << ", " << precision_name(precision) << " peak "
        << static_cast<int>(peak) << " GFLOP/s"
        << (tc.peak_gflops > 0 ? " (train.peak_gflops)"
            : gpu              ? " (unknown for this GPU: set train.peak_gflops for MFU)"
            : bf16_dot         ? " (measured: best of 5 bf16 dot-product probes)"
            : precision == Precision::bf16
                ? " (measured: best of 5 FMA probes; widened bf16 GEMMs run at the fp32 rate)"
                : " (measured: best of 5 FMA probes)")
        << "\n"
        << "precision: " << precision_name(precision)
        << (precision == Precision::bf16
                ? " GEMMs (bf16 operands, fp32 sums); fp32 master weights, gradients, optimizer "
                  "state, norms, softmax and loss"
                : "")
        << (tc.precision == "auto" ? " (train.precision: auto)" : "") << "\n";
    if (precision == Precision::bf16 && !ops::native_bf16() && !gpu) {
        const auto [fp32, bf16] = gemm_seconds_fp32_bf16(1024, job.model.d_model);
        out << "note: this CPU has no native bf16 dot products (avx512_bf16), so bf16 GEMM "
               "operands are widened to fp32: a "
            << 1024 << " x " << job.model.d_model << " x " << job.model.d_model << " GEMM takes "
            << static_cast<int>(100 * bf16 / fp32)
            << " % of its fp32 time here, so steps run no faster than fp32 (train.precision: "
               "fp32 is the faster choice on this CPU)\n";
    }
    out << "run directory: " << job.run_dir << "\n";
    out.flush();

    // Reporting: the console on every rank (silent but on rank 0), the files on rank 0.
    MetricSinks sinks;
    sinks.add(std::make_unique<ConsoleSink>(out));
    if (writer) {
        const long keep = resume ? start_step : -1;  // a resume drops what followed its checkpoint
        sinks.add(std::make_unique<JsonlSink>(job.run_dir + "/metrics.jsonl", keep));
        if (job.log.tensorboard)
            sinks.add(std::make_unique<TensorBoardSink>(job.run_dir + "/tb", keep));
    }
    const std::size_t per_micro = static_cast<std::size_t>(B) * T;
    std::vector<std::int32_t> tokens(per_micro * accum), targets(per_micro * accum);
    // With chunks the batch is read at its first chunk into batch_tokens.
    const long n_update = T / U;
    std::vector<std::int32_t> batch_tokens, batch_targets;
    if (n_update > 1) {
        batch_tokens.resize(per_micro * accum), batch_targets.resize(per_micro * accum);
        learner.set_vq_carry(true);
        MESHLM_CHECK(start_step % n_update == 0, "resuming at step ", start_step,
                     ": with model.vq.update_len the run resumes at a multiple of ", n_update);
    }
    // Synthetic data is drawn for the whole global micro-batch, of which a rank keeps its rows.
    std::vector<std::int32_t> all_tokens, all_targets;
    if (job.data.synthetic && W > 1)
        all_tokens.resize(per_micro * W), all_targets.resize(per_micro * W);

    // Synthetic batches skipped by rollbacks (train.nan_policy): step s draws Philox(seed, s +
    // batch_offset). The step of the newest checkpoint this process knows to exist.
    long batch_offset = resume ? resume->batch_offset : 0;
    long last_saved = resume ? start_step : -1;
    const std::uint64_t ckpt_bytes = checkpoint_bytes_estimate(
        learner.full_layout().total(), optimizer_slots(job.optim.name).count(),
        learner.optimizer().stat_floats());
    // Writes the checkpoint of `step`; false when it failed and checkpoint.on_error=continue
    // (`must`: the run stops after it anyway, so a failure always throws).
    auto save_checkpoint = [&](long step, bool must) {
        ActivityPhase phase("checkpoint write");
        TrainerState st;
        st.step = step;
        st.tokens_seen = tokens_seen;
        if (train_data) st.loader = train_data->state();
        st.seed = tc.seed;
        st.batch_offset = batch_offset;
        st.best_val = best_val;
        st.config_yaml = job.resolved_yaml;
        st.run_id = run_id;
        const auto t0 = Clock::now();
        const int every = job.checkpoint.interval;
        CheckpointAttempt attempt{job.run_dir,
                                  step,
                                  ckpt_bytes,
                                  job.checkpoint.on_error,
                                  must,
                                  every > 0 && step < tc.steps
                                      ? std::min<long>((step / every + 1) * every, tc.steps)
                                      : 0};
        const auto dir = write_checkpoint_or_report(
            [&] {
                // Several ranks: each writes its own shard (collective); nothing is gathered.
                if (world.size() > 1)
                    return write_sharded_checkpoint(mesh, learner, job.model,
                                                    job.parallel.zero_stage, job.run_dir, st,
                                                    job.checkpoint);
                // One process: the single-file format (a ZeRO stage >= 1 on one rank still
                // keeps its moments apart from optimizer(); gather_optimizer() gives them whole).
                const float* params = learner.full_params();
                auto whole = learner.gather_optimizer();
                return write_checkpoint(job.run_dir, st, learner.full_layout(), params,
                                        whole ? *whole : learner.optimizer(), job.checkpoint);
            },
            attempt, out);
        if (!dir) return false;
        result.last_checkpoint = *dir;
        last_saved = step;
        char line[64];
        std::snprintf(line, sizeof line, " (%.2f s)",
                      std::chrono::duration<double>(Clock::now() - t0).count());
        out << "step " << std::setw(6) << step << "/" << tc.steps << " | checkpoint "
            << result.last_checkpoint << line << "\n";
        out << average.after_checkpoint(*dir, job.run_dir, step,
                                        job.checkpoint.on_error == "continue");
        return true;
    };

    // Bad steps (train.nan_policy, nan_policy.h): the guard sees each step's loss and gradient
    // norm before its update; a refused update leaves `bad` saying why.
    const NanPolicy nan_policy = parse_nan_policy(tc.nan_policy);
    StepGuard guard(tc, world);
    StepFault bad = StepFault::none;
    learner.set_step_check([&](const StepStats& s) {
        bad = guard.check(s.loss, s.grad_norm);
        return bad == StepFault::none;
    });
    if (tc.debug_inject_nan_step > 0 && world.rank() == world.size() - 1)
        learner.inject_nan_at(tc.debug_inject_nan_step);
    long skipped_steps = 0;
    int rollbacks = 0;
    // Stops the run after a bad step at `done`, with a checkpoint of the step before it.
    auto halt_run = [&](long done, const std::string& what, const std::string& why) {
        const long good = done - 1;
        std::string saved;
        if (good % n_update != 0) {
            saved = "no checkpoint of step " + std::to_string(good) +
                    " (model.vq.update_len: checkpoints are written at batch ends)";
        } else {
            try {
                if (last_saved != good) save_checkpoint(good, true);
                saved = "the weights and optimizer state of step " + std::to_string(good) +
                        " are in " + job.run_dir + "/checkpoints/step_" + std::to_string(good) +
                        " (--resume " + job.run_dir + " continues from them)";
            } catch (const std::exception& e) {
                saved = e.what();
            }
        }
        out.flush();  // the console lines before the error
        MESHLM_INVALID(
            "training halted (train.nan_policy=", nan_policy_name(nan_policy), why, "): ", what,
            ". The update of step ", done, " was not applied; ", saved,
            ". To train past such steps set train.nan_policy=skip or rollback; if the loss "
            "diverges, lower optim.lr (now ",
            job.optim.lr, ")",
            job.optim.grad_clip > 0 ? "" : " or set optim.grad_clip (clipping is off)");
    };
    // Reloads checkpoint `dir` and skips the next train.rollback_skip_batches batches; returns
    // the checkpoint's step.
    auto roll_back = [&](const std::string& dir) {
        const TrainerState s = read_checkpoint(dir);
        load_learner_checkpoint(dir, s, job.model, learner, mesh);
        tokens_seen = s.tokens_seen;
        best_val = s.best_val;
        batch_offset = s.batch_offset;
        if (job.data.synthetic)
            batch_offset += static_cast<long>(tc.rollback_skip_batches) * n_update;
        if (train_data) {
            train_data->restore(s.loader);
            for (long b = 0; b < tc.rollback_skip_batches; ++b) {
                const StepShape sh = step_shape(tc, s.step + b * n_update);
                for (int m = 0; m < accum; ++m)
                    train_data->next_batch(sh.rows * W, sh.len, tokens.data(), targets.data(),
                                           dp_rank, W);
            }
        }
        guard.clear();
        last_saved = s.step;
        average.drop_after(s.step);
        return s.step;
    };
    // A step's whole record to every sink, with the tokens seen and the time.
    auto record = [&](StepMetrics& m) {
        m.tokens = tokens_seen;
        m.wall_time = unix_now();
        sinks.record(m);
    };
    // A step at `done` whose update was refused: say why, then halt (throws), skip (returns
    // nullopt) or roll back (returns the step of the checkpoint reloaded).
    auto on_bad_step = [&](long done, const StepStats& st) -> std::optional<long> {
        const std::string site =
            bad == StepFault::non_finite ? first_nonfinite_site(world, learner, st.loss) : "";
        const std::string what = describe_step_fault(bad, done, st, guard, site);
        StepMetrics m;
        m.step = done, m.loss = st.loss, m.grad_norm = st.grad_norm, m.fault = step_fault_name(bad);
        if (nan_policy == NanPolicy::halt) {
            record(m);
            halt_run(done, what, "");
        }
        if (nan_policy == NanPolicy::skip) {
            learner.count_skipped_step();
            ++skipped_steps;
            out << what << ": update skipped (train.nan_policy=skip; " << skipped_steps
                << " skipped so far)\n";
            return std::nullopt;  // the step's log line and metrics say the rest
        }
        const std::optional<std::string> dir = latest_checkpoint(job.run_dir);
        if (rollbacks >= tc.max_rollbacks || !dir) {
            record(m);
            halt_run(done, what,
                     dir ? " after " + std::to_string(rollbacks) + " rollbacks, train.max_rollbacks"
                         : std::string(", with no checkpoint yet to roll back to"));
        }
        const long to = roll_back(*dir);
        ++rollbacks;
        m.rolled_back_to = to;
        record(m);
        out << what << ": rolled back to " << *dir << " (step " << to << "), skipping the next "
            << tc.rollback_skip_batches << " batches (train.nan_policy=rollback; rollback "
            << rollbacks << " of at most " << tc.max_rollbacks << ")\n";
        out.flush();
        return to;
    };

    StopSignals stop;
    bool mfu_capped = false;
    const auto train_start = Clock::now();
    auto interval_start = train_start;
    long interval_tokens = 0;
    for (long step = start_step; step < tc.steps; ++step) {
        // Staged sequence-length warmup: shorter rows, more of them, same tokens per step.
        const StepShape shape = step_shape(tc, step);
        const int Ts = shape.len, Bs = shape.rows;
        Philox rng(tc.seed, 0xDA7A0000ull + static_cast<std::uint64_t>(step + batch_offset));
        const int chunk = static_cast<int>(step % n_update);
        std::int32_t* batch_tok = n_update > 1 ? batch_tokens.data() : tokens.data();
        std::int32_t* batch_tgt = n_update > 1 ? batch_targets.data() : targets.data();
        for (int m = 0; m < accum && chunk == 0; ++m) {
            std::int32_t *tok = batch_tok + m * per_micro, *tgt = batch_tgt + m * per_micro;
            if (job.data.synthetic && W == 1) {
                random_tokens(Bs, Ts, job.model.vocab_size, rng, tok, tgt);
            } else if (job.data.synthetic) {
                random_tokens(Bs * W, Ts, job.model.vocab_size, rng, all_tokens.data(),
                              all_targets.data());
                const std::size_t mine = static_cast<std::size_t>(Bs) * Ts, at = mine * dp_rank;
                std::copy_n(all_tokens.data() + at, mine, tok);
                std::copy_n(all_targets.data() + at, mine, tgt);
            } else {
                train_data->next_batch(Bs * W, Ts, tok, tgt, dp_rank, W);
            }
        }
        if (n_update > 1) {
            if (chunk == 0) learner.reset_vq_carry();
            copy_row_chunk(batch_tok, accum * B, T, chunk, U, tokens.data());
            copy_row_chunk(batch_tgt, accum * B, T, chunk, U, targets.data());
        }
        set_activity_step(step + 1);
        set_activity_phase("training step");
        fault_point(world.rank(), "train_step", step + 1);
        mesh.reset_bytes_sent();
        if (device_mesh) device_mesh->reset_bytes_sent();
        // Dropout masks follow each row's place in the global batch (this rank's rows come
        // after those of the ranks before it), so any data-parallel layout drops alike.
        learner.set_dropout(tc.seed, static_cast<std::int64_t>(dp_rank) * Bs);
        const bool coord_now = tc.coord_interval > 0 && (step + 1) % tc.coord_interval == 0;
        if (coord_now) learner.record_coord_check();
        StepStats st =
            learner.train_step(tokens.data(), targets.data(), accum, Bs, n_update > 1 ? U : Ts);
        const std::uint64_t step_bytes =
            mesh.bytes_sent() + (device_mesh ? device_mesh->bytes_sent() : 0);
        if (!st.applied) {
            if (const auto back = on_bad_step(step + 1, st)) {
                step = *back - 1;  // rolled back: the loop goes on after the checkpoint's step
                interval_start = Clock::now(), interval_tokens = 0;
                continue;
            }
        }
        interval_tokens += static_cast<long>(per_micro / n_update) * accum * W;
        tokens_seen += per_micro / n_update * accum * W;
        result.final_loss = st.loss;
        average.after_step(step + 1);

        const long done = step + 1;
        const bool last = done == tc.steps;
        const bool log_now = done % job.log.interval == 0 || last || !st.applied;
        const bool eval_now =
            !job.data.synthetic &&
            ((job.log.eval_interval > 0 && done % job.log.eval_interval == 0) || last);
        const bool ckpt_due =
            job.checkpoint.interval > 0 && (done % job.checkpoint.interval == 0 || last);
        StepMetrics m;
        m.step = done;
        if (!st.applied) m.fault = step_fault_name(bad);
        if (skipped_steps > 0) m.skipped_steps = skipped_steps;
        if (coord_now) coord_check_metrics(learner, world, m);
        if (log_now) {
            if (tc.seq_warmup_steps > 0) m.seq_len = Ts;
            double secs = std::chrono::duration<double>(Clock::now() - interval_start).count();
            double tps = interval_tokens / secs;
            m.loss = st.loss, m.lr = st.lr, m.grad_norm = st.grad_norm;
            m.tokens_per_s = tps;
            // Never above 100 %: throughput beyond the peak means the peak was set or measured
            // too low (say so once).
            const double achieved = tps * flops_per_token / (1e9 * world.size());
            if (peak > 0 && achieved > peak && !mfu_capped) {
                mfu_capped = true;
                out << "note: " << static_cast<int>(achieved) << " GFLOP/s per rank exceeds the "
                    << precision_name(precision) << " peak of " << static_cast<int>(peak)
                    << " GFLOP/s" << (tc.peak_gflops > 0 ? " (train.peak_gflops)" : " (measured)")
                    << "; MFU is shown capped at 100 %; set train.peak_gflops to the machine's "
                       "peak\n";
            }
            if (peak > 0)
                m.mfu = std::min(1.0,
                                 model_flops_utilization(tps, flops_per_token, peak, world.size()));
            if (world.size() > 1) m.comm_bytes = step_bytes;
            if (st.vq)
                m.vq = {{"commit", st.vq->commit},
                        {"usage", st.vq->usage},
                        {"entropy", st.vq->entropy}};
            // Elapsed since this process started training; the ETA from its mean step time.
            StepContext ctx;
            ctx.total_steps = tc.steps;
            ctx.ranks = world.size();
            ctx.elapsed = std::chrono::duration<double>(Clock::now() - train_start).count();
            if (!last)
                ctx.eta = ctx.elapsed / static_cast<double>(done - start_step) *
                          static_cast<double>(tc.steps - done);
            sinks.train_line(m, ctx);
        }
        std::optional<double> val_now;
        if (eval_now) {
            EvalResult ev =
                evaluate_val(last ? tc.final_eval_batches : tc.eval_batches, tokens.data(),
                             targets.data(), last ? "final evaluation" : "evaluation");
            const float val = static_cast<float>(ev.loss());
            m.val_loss = val;
            val_now = val;
            result.final_val_loss = val;
            sinks.validation(m, ev.bits_per_byte(), tc.steps);
        }
        if (log_now || eval_now || coord_now) {
            out.flush();
            record(m);
        }
        // Every rank stops after the same step (the signal may reach them at different times).
        // With chunks (model.vq.update_len) only at the end of a batch: the carried state is
        // not checkpointed.
        std::int32_t stop_now = stop.requested() && (step + 1) % n_update == 0;
        if (world.size() > 1) world.all_reduce_max(&stop_now, 1);
        if (stop_now) {
            out << "received "
                << (!stop.requested()         ? "a stop signal on another rank"
                    : stop.signal() == SIGINT ? "SIGINT"
                                              : "SIGTERM")
                << ": stopping after step " << done << "\n";
            save_checkpoint(done, true);
            result.interrupted = true;
            out << "resume with: " << resume_command(world.size(), job.run_dir) << "\n";
            out.flush();
            return result;
        }
        if (ckpt_due) {
            bool write = true;
            if (job.checkpoint.only_better && !job.data.synthetic) {
                if (!val_now)
                    val_now =
                        evaluate_val(tc.eval_batches, tokens.data(), targets.data(), "evaluation")
                            .loss();
                write = !best_val || *val_now < *best_val;
                if (write)
                    best_val = val_now;
                else
                    out << "step " << std::setw(6) << done << "/" << tc.steps
                        << " | no checkpoint: validation loss " << *val_now
                        << " did not improve on " << *best_val << "\n";
            }
            if (write) save_checkpoint(done, false);
        }
        if (log_now || eval_now || ckpt_due) {
            out.flush();
            interval_start = Clock::now();
            interval_tokens = 0;
        }
    }

    // Before the final weights are written: what the training steps needed.
    std::int64_t rss = static_cast<std::int64_t>(peak_rss_bytes());
    if (world.size() > 1) world.all_reduce_max(&rss, 1);
    char rss_line[96];
    std::snprintf(rss_line, sizeof rss_line, "peak RSS during training%s: %.0f MiB\n",
                  world.size() > 1 ? " (largest rank)" : "", static_cast<double>(rss) / 1048576);
    out << rss_line;
    const std::string weights_path = job.run_dir + "/model.safetensors";
    const std::map<std::string, std::string> weights_meta = {{"format", "meshlm"},
                                                             {"step", std::to_string(tc.steps)}};
    out << average.write_weights(job.run_dir, weights_meta);
    if (world.size() == 1) {
        const float* final_params = learner.full_params();
        save_weights(weights_path, learner.full_layout(), final_params, weights_meta);
        out << "saved " << weights_path << "\n";
        if (job.on_finish) sinks.text(tc.steps, "sample", job.on_finish(final_params, *tokenizer));
        return result;
    }
    // Every rank writes its chunk in place: no rank gathers the model.
    set_activity_phase("final weights write");
    write_final_weights(mesh, learner, job.model, weights_path, weights_meta);
    out << "saved " << weights_path << " (written by all " << world.size() << " ranks)\n";
    if (writer && job.on_finish) {  // the sample: rank 0 reads the model back
        Buffer<float> w(learner.full_layout().total());
        load_weights(weights_path, learner.full_layout(), w.data());
        sinks.text(tc.steps, "sample", job.on_finish(w.data(), *tokenizer));
    }
    world.barrier();
    return result;
}

}  // namespace meshlm
