#include "meshlm/train/sharded_optimizer.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "meshlm/core/error.h"
#include "meshlm/core/trace.h"
#include "meshlm/kernels/ops/clip.h"
#include "meshlm/kernels/ops/elementwise.h"
#include "meshlm/optim/param_groups.h"
#include "meshlm/optim/schedule.h"
#include "meshlm/parallel/tp_shard.h"

namespace meshlm {

namespace {
// The optimizer over what a rank of `plan` updates: its chunk (stages 1-3), else everything.
Optimizer make_rank_optimizer(const ModelConfig& model, const OptimConfig& optim,
                              const ParamLayout& layout, const ZeroPlan& plan, Comm& mp,
                              Device device) {
    // Decay groups from the local layout: it keeps the whole layout's tensors and facts.
    const bool chunked = plan.stage >= 1;
    std::vector<ParamGroup> groups = param_groups(layout, optim, model.d_model, model.mup_d_base);
    return Optimizer(optim, chunked ? shard_groups(groups, plan.begin(), plan.end()) : groups,
                     chunked ? plan.chunk : plan.padded,
                     optim.name == "adafactor"
                         ? adafactor_plan(layout, mp.size(), mp.rank(), chunked ? plan.begin() : 0,
                                          chunked ? plan.end() : plan.padded, optim)
                         : AdafactorPlan{},
                     false, device);
}
}  // namespace

ShardedOptimizer::ShardedOptimizer(const ModelConfig& model, const OptimConfig& optim,
                                   const ParamLayout& layout, const ParamLayout& full,
                                   ParamState& state, Comm& dp, Comm& mp)
    : model_cfg_(model),
      optim_cfg_(optim),
      layout_(layout),
      full_layout_(full),
      state_(state),
      dp_(dp),
      mp_(mp),
      optim_(make_rank_optimizer(model, optim, layout, state.plan(), mp, state.device())) {
    // Adafactor's per-tensor sums (host doubles): over the data ranks when ZeRO chunks the
    // tensors, over the model ranks when tensor parallelism shards them (one all-reduce each).
    const bool chunked = state.plan().stage >= 1 && dp.size() > 1, tp = mp.size() > 1;
    if (chunked || tp)
        optim_.set_tensor_sum([&dp, &mp, chunked, tp](double* sums, std::size_t n) {
            if (chunked) dp.host().all_reduce_sum(sums, n);
            if (tp) mp.host().all_reduce_sum(sums, n);
        });
}

float ShardedOptimizer::clip() {
    TraceScope trace("gradient norm");
    const ZeroPlan& plan = state_.plan();
    const Device device = state_.device();
    const bool tp = mp_.size() > 1;
    const bool fold = optim_.folds_grad_scale();
    grad_scale_ = 1.f;
    if (!tp && plan.stage <= 1)
        return clip_gradients(optim_cfg_, state_.grads(), state_.grad_floats(),
                              fold ? &grad_scale_ : nullptr, device);
    // The global norm from what this rank holds: its chunk (stages 2-3, summed over the data
    // ranks) of its local buffer. With TP, sharded slices are summed over the model ranks and
    // replicated ones, the same on every model rank, counted once. Padding is zero.
    const bool chunked = plan.stage >= 2;
    float* g = state_.reduced_grads();
    const std::size_t lo = chunked ? plan.begin() : 0, hi = lo + (chunked ? plan.chunk : 0);
    double sums[2] = {0, 0};  // sharded, replicated
    if (!tp) {
        // One sum over the chunk: bitwise what stage 0 computes on one rank, and a single
        // double on the wire.
        sums[0] = ops::sum_squares(flat(g, plan.chunk, device));
        if (dp_.size() > 1) dp_.host().all_reduce_sum(sums, 1);
    } else if (!chunked) {
        sums[0] = tp_sum_squares(layout_, g, mp_, device);
    } else {
        for (const ParamSlice& s : layout_.slices()) {
            const std::size_t a = std::max(s.offset, lo), b = std::min(s.offset + s.numel, hi);
            if (a < b)
                sums[s.split == TpSplit::replicated] +=
                    ops::sum_squares(flat(g + (a - lo), b - a, device));
        }
        if (dp_.size() > 1) dp_.host().all_reduce_sum(sums, 2);
        mp_.host().all_reduce_sum(sums, 1);
    }
    const float norm = static_cast<float>(std::sqrt(sums[0] + sums[1]));
    grad_scale_ = apply_clip(optim_cfg_, g, state_.reduced_grad_floats(), norm, fold, device);
    return norm;
}

std::unique_ptr<Optimizer> ShardedOptimizer::make_full() const {
    const std::size_t n = mp_.size() > 1 ? full_layout_.total() : state_.plan().padded;
    // Flat: Adafactor's second moments as the checkpoints' slot.
    return std::make_unique<Optimizer>(
        optim_cfg_,
        param_groups(full_layout_, optim_cfg_, model_cfg_.d_model, model_cfg_.mup_d_base), n,
        optim_cfg_.name == "adafactor" ? adafactor_plan(full_layout_, 1, 0, 0, n, optim_cfg_)
                                       : AdafactorPlan{},
        true);
}

std::unique_ptr<Optimizer> ShardedOptimizer::gather() {
    const ZeroPlan& plan = state_.plan();
    const Device device = state_.device();
    const bool tp = mp_.size() > 1;
    if (plan.stage == 0 && !tp && !optim_.packed_v() && device == Device::cpu) return nullptr;
    auto full = make_full();
    // First this model rank's whole local moments (every data rank's chunk), then with TP
    // every model rank's shard placed into the full layout.
    const std::size_t at = plan.stage == 0 ? 0 : plan.begin();
    const std::size_t n = plan.stage == 0 ? plan.padded : plan.chunk;
    Buffer<float> unpacked;  // Adafactor's packed second moments as the flat slot of the range
    const float* v = optim_.v();
    if (optim_.packed_v()) {
        unpacked = Buffer<float>(n);
        optim_.export_v(unpacked.data());
        v = unpacked.data();
    }
    for (auto [mine, whole] :
         {std::pair<const float*, float*>{optim_.m(), full->m()}, {v, full->v()}}) {
        if (!mine) continue;  // Lion keeps no second moment, Adafactor no first
        Buffer<float> local;
        float* to = whole;
        if (tp) local = Buffer<float>(plan.padded), to = local.data();
        // Adafactor's packed moments were unpacked to the host already.
        copy_floats(to + at, Device::cpu, mine, mine == unpacked.data() ? Device::cpu : device, n);
        if (plan.stage >= 1) dp_.host().all_gather(to, plan.chunk);
        if (tp) tp_gather(full_layout_, layout_, mp_, to, whole);
    }
    // Whole on every rank already (Adafactor's factored statistics).
    if (optim_.stat_floats())
        copy_floats(full->stats(), Device::cpu, optim_.stats(), device, optim_.stat_floats());
    full->set_steps_taken(optim_.steps_taken());
    return full;
}

void ShardedOptimizer::load(Optimizer& full) {
    const ZeroPlan& plan = state_.plan();
    const Device device = state_.device();
    const std::size_t at = plan.stage == 0 ? 0 : plan.begin();
    const std::size_t n = plan.stage == 0 ? plan.padded : plan.chunk;
    if (&full != &optim_) {
        Buffer<float> unpacked(optim_.packed_v() ? n : 0);  // Adafactor's, see gather()
        float* v = optim_.packed_v() ? unpacked.data() : optim_.v();
        for (auto [mine, whole] : {std::pair{optim_.m(), full.m()}, {v, full.v()}}) {
            if (!mine) continue;
            const float* from = whole;
            Buffer<float> local;
            if (mp_.size() > 1) {  // this model rank's shard of the full layout first
                local = Buffer<float>(plan.padded);
                tp_scatter(full_layout_, layout_, mp_.size(), mp_.rank(), whole, local.data());
                from = local.data();
            }
            copy_floats(mine, mine == unpacked.data() ? Device::cpu : device, from + at,
                        Device::cpu, n);
        }
        if (optim_.packed_v()) optim_.import_v(unpacked.data());
        if (optim_.stat_floats())
            copy_floats(optim_.stats(), device, full.stats(), Device::cpu, optim_.stat_floats());
    }
    optim_.set_steps_taken(full.steps_taken());
}

ChunkState ShardedOptimizer::local_chunk() {
    const ZeroPlan& plan = state_.plan();
    const auto [begin, count] = state_.chunk_span();
    // Stage 0's moments are whole.
    const std::size_t at = plan.stage == 0 ? begin : 0;
    const float* v = optim_.v();
    if (optim_.packed_v()) {  // Adafactor's packed second moments, as the flat slot
        v_export_ = Buffer<float>(plan.stage == 0 ? plan.padded : plan.chunk);
        optim_.export_v(v_export_.data());
        v = v_export_.data();
    }
    // Off the CPU a host copy of each (Adafactor, whose v is exported above, is CPU-only).
    return {state_.chunk_on_host(state_.chunk_params(), count, 0),
            optim_.m() ? state_.chunk_on_host(optim_.m() + at, count, 1) : nullptr,
            v ? state_.chunk_on_host(v + at, count, 2) : nullptr,
            begin,
            count,
            optim_.stats()};
}

void ShardedOptimizer::load_local_chunk(const float* params, const float* m, const float* v,
                                        const float* stats, long step) {
    const ZeroPlan& plan = state_.plan();
    const Device device = state_.device();
    // Not a structured binding: clang 14 (the TSan build) cannot capture one in the lambda.
    const std::size_t begin = state_.chunk_span().first, count = state_.chunk_span().second;
    const std::size_t at = plan.stage == 0 ? begin : 0;
    const std::size_t pad = plan.chunk - count;
    // The host chunk onto `on`, its padding zeroed.
    auto put = [&](float* dst, Device on, const float* src) {
        copy_floats(dst, on, src, Device::cpu, count);
        if (pad > 0) ops::fill(flat(dst + count, pad, on), 0.f);
    };
    put(state_.chunk_params(), device, params);
    MESHLM_CHECK(!optim_.m() || m, "the checkpoint has no first moments for ", optim_cfg_.name);
    const bool packed = optim_.packed_v();
    MESHLM_CHECK(!(optim_.v() || packed) || v, "the checkpoint has no second moments for ",
                 optim_cfg_.name);
    MESHLM_CHECK(!optim_.stats() || stats, "the checkpoint has no factored statistics for ",
                 optim_cfg_.name);
    std::copy_n(stats, optim_.stat_floats(), optim_.stats());
    // Adafactor's packed second moments go through the flat slot of the range.
    Buffer<float> unpacked(packed ? (plan.stage == 0 ? plan.padded : plan.chunk) : 0);
    for (auto [mine, from] :
         {std::pair{optim_.m(), m}, {packed ? unpacked.data() : optim_.v(), v}}) {
        if (!mine) continue;  // Lion keeps no second moment, Adafactor no first
        put(mine + at, packed && mine == unpacked.data() ? Device::cpu : device, from);
        if (dp_.size() > 1 && plan.stage == 0) dp_.all_gather(mine, plan.chunk);
    }
    if (packed) optim_.import_v(unpacked.data());
    state_.chunk_params_written();
    optim_.set_steps_taken(step);
}

}  // namespace meshlm
