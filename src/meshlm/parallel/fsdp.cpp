#include "meshlm/parallel/fsdp.h"

#include <algorithm>
#include <cstring>

#include "meshlm/core/error.h"
#include "meshlm/kernels/ops/bf16.h"
#include "meshlm/kernels/ops/elementwise.h"
#include "meshlm/kernels/ops/residual.h"

namespace meshlm {
namespace {

// The part of [lo, hi) inside rank r's chunk, as [a, b) (a == b when empty).
std::pair<std::size_t, std::size_t> part_of(const ZeroPlan& p, int r, std::size_t lo,
                                            std::size_t hi) {
    const std::size_t c0 = p.chunk * static_cast<std::size_t>(r), c1 = c0 + p.chunk;
    const std::size_t a = std::max(lo, c0), b = std::min(hi, c1);
    return a < b ? std::pair{a, b} : std::pair{a, a};
}

}  // namespace

FsdpSizes fsdp_sizes(const ParamLayout& layout, const ZeroPlan& plan, bool gather_params,
                     bool bf16) {
    const int units = layout.unit_count();
    FsdpSizes s{gather_params, gather_params && bf16, 0, 0, 0};
    for (int u = 0; u < units; ++u) {
        const auto [lo, hi] = layout.unit_range(u);
        if (u == 0 || u == units - 1) {
            s.root += hi - lo;
            continue;
        }
        s.block = std::max(s.block, hi - lo);
        for (int r = 0; r < plan.ranks; ++r) {
            const auto [a, b] = part_of(plan, r, lo, hi);
            s.receive = std::max(s.receive, b - a);
        }
    }
    return s;
}

FsdpStream::FsdpStream(Comm& comm, const ZeroPlan& plan, const ParamLayout& layout,
                       const float* params, float* grads, bool gather_params, bool bf16)
    : comm_(comm),
      device_(comm.device()),
      plan_(plan),
      params_(params),
      grads_(grads),
      n_units_(layout.unit_count()),
      sizes_(fsdp_sizes(layout, plan, gather_params, bf16)),
      root_params_(device_, gather_params ? sizes_.root : 0),
      root_grads_(device_, sizes_.root) {
    MESHLM_CHECK(comm.size() == plan.ranks && comm.rank() == plan.rank, "FSDP plan for rank ",
                 plan.rank, " of ", plan.ranks, " on rank ", comm.rank(), " of ", comm.size());
    for (int u = 0; u < n_units_; ++u) {
        units_.push_back(layout.unit_range(u));
        std::vector<std::size_t> counts;
        for (int r = 0; r < plan.ranks; ++r) {
            const auto [a, b] = part_of(plan, r, units_[u].first, units_[u].second);
            counts.push_back(b - a);
        }
        counts_.push_back(std::move(counts));
    }
    for (Slot& s : slots_) {
        if (gather_params) s.params = kernels::FloatArray(device_, sizes_.block);
        if (sizes_.bf16)
            s.params16 = kernels::DeviceBuffer(device_, DType::bf16,
                                               {static_cast<std::int64_t>(sizes_.block)});
        s.grads = kernels::FloatArray(device_, sizes_.block);
        s.receive = kernels::FloatArray(device_, sizes_.receive);
    }
}

float* FsdpStream::root_at(kernels::FloatArray& buf, int unit) {
    return unit == 0 ? buf.data() : buf.data() + (units_[0].second - units_[0].first);
}

CommRequest FsdpStream::start_gather(int unit, float* dst) {
    const auto [lo, hi] = units_[unit];
    const auto [a, b] = part_of(plan_, plan_.rank, lo, hi);
    if (a < b) kernels::copy(on(dst + (a - lo), b - a), on(params_ + (a - plan_.begin()), b - a));
    return comm_.iall_gather(dst, std::span<const std::size_t>(counts_[unit]));
}

CommRequest FsdpStream::start_gather16(int unit, std::uint16_t* dst) {
    // Each rank rounds its own part; the bf16 parts travel, and the caller widens the unit.
    const auto [lo, hi] = units_[unit];
    const auto [a, b] = part_of(plan_, plan_.rank, lo, hi);
    if (a < b) ops::to_bf16(on(dst + (a - lo), b - a), on(params_ + (a - plan_.begin()), b - a));
    return comm_.iall_gather(dst, std::span<const std::size_t>(counts_[unit]));
}

void FsdpStream::start_block_gather(Slot& s, int unit) {
    s.unit = unit;
    if (!sizes_.bf16) {
        s.gather = start_gather(unit, s.params.data());
        return;
    }
    s.gather = start_gather16(unit, static_cast<std::uint16_t*>(s.params16.data()));
    s.widen = true;
}

void FsdpStream::finish_gather(Slot& s) {
    s.gather.wait();
    if (!s.widen) return;
    const std::size_t n = units_[s.unit].second - units_[s.unit].first;
    ops::from_bf16(on(s.params.data(), n),
                   on(static_cast<const std::uint16_t*>(s.params16.data()), n));
    s.widen = false;
}

void FsdpStream::accumulate(int unit, const float* receive) {
    const auto [a, b] = part_of(plan_, plan_.rank, units_[unit].first, units_[unit].second);
    float* g = grads_ + (a - plan_.begin());
    const Tensor gv = on(g, b - a);
    ops::residual_forward(gv, gv, on(receive, b - a));
}

void FsdpStream::finish_reduce(Slot& s) {
    if (s.reducing < 0) return;
    s.reduce.wait();
    accumulate(s.reducing, s.receive.data());
    s.reducing = -1;
}

void FsdpStream::begin(bool gradients) {
    gradients_ = gradients;
    if (gradients) ops::fill(on(root_grads_.data(), root_grads_.size()), 0.f);
    if (!sizes_.gather) return;
    const int last = n_units_ - 1;
    if (!sizes_.bf16) {
        CommRequest a = start_gather(0, root_at(root_params_, 0));
        CommRequest b = start_gather(last, root_at(root_params_, last));
        a.wait();
        b.wait();
        return;
    }
    // The bf16 units fill the first half of the fp32 buffer (unit L + 1 after unit 0), which is
    // then widened in place: no second buffer for the embeddings.
    auto* r16 = reinterpret_cast<std::uint16_t*>(root_params_.data());
    const std::size_t n0 = units_[0].second - units_[0].first;
    CommRequest a = start_gather16(0, r16);
    CommRequest b = start_gather16(last, r16 + n0);
    a.wait();
    b.wait();
    ops::from_bf16_in_place(on(root_params_.data(), sizes_.root));
}

void FsdpStream::end() {
    for (Slot& s : slots_) finish_reduce(s);
    for (Slot& s : slots_) {
        s.gather.wait();  // a prefetch nobody acquired (the last forward block's successor)
        s.widen = false;
        s.unit = -1;
        s.held = false;
    }
    if (!gradients_) return;
    // Units 0 and L + 1 are reduced once per step, so their sums go straight into their
    // (otherwise untouched, zeroed) parts of the gradient chunk: no receive buffer.
    CommRequest reduce[2];
    for (int i : {0, 1}) {
        const int u = i ? n_units_ - 1 : 0;
        const std::size_t a = part_of(plan_, plan_.rank, units_[u].first, units_[u].second).first;
        reduce[i] = comm_.ireduce_scatter_sum(root_at(root_grads_, u), grads_ + (a - plan_.begin()),
                                              std::span<const std::size_t>(counts_[u]));
    }
    for (CommRequest& r : reduce) r.wait();
    gradients_ = false;
}

const float* FsdpStream::acquire(int unit, Pass pass) {
    if (!sizes_.gather) return params_ + units_[unit].first;
    if (!is_block(unit)) return root_at(root_params_, unit);
    Slot* slot = nullptr;
    for (Slot& s : slots_)
        if (s.unit == unit) slot = &s;
    if (!slot) {
        for (Slot& s : slots_)
            if (!s.held && !slot) slot = &s;
        MESHLM_CHECK(slot, "FSDP: no free slot for unit ", unit);
        slot->gather.wait();
        start_block_gather(*slot, unit);
    }
    finish_gather(*slot);
    slot->held = true;
    // Prefetch the next block of this pass into the other slot.
    const int next = pass == Pass::forward ? unit + 1 : unit - 1;
    Slot& other = slots_[slot == &slots_[0] ? 1 : 0];
    if (is_block(next) && !other.held && other.unit != next) {
        other.gather.wait();
        start_block_gather(other, next);
    }
    return slot->params.data();
}

void FsdpStream::release(int unit) {
    if (!is_block(unit)) return;
    for (Slot& s : slots_)
        if (s.unit == unit && s.held) {
            s.held = false;
            s.unit = -1;
        }
}

float* FsdpStream::grads(int unit) {
    if (!is_block(unit)) return root_at(root_grads_, unit);
    Slot& s = slots_[next_grads_++ % 2];
    finish_reduce(s);  // the buffer's previous block
    const auto [lo, hi] = units_[unit];
    ops::fill(on(s.grads.data(), hi - lo), 0.f);
    s.grads_of = unit;
    return s.grads.data();
}

void FsdpStream::grads_done(int unit) {
    if (!is_block(unit)) return;  // units 0 and L + 1 accumulate until end()
    for (Slot& s : slots_)
        if (s.grads_of == unit) {
            s.reduce = comm_.ireduce_scatter_sum(s.grads.data(), s.receive.data(),
                                                 std::span<const std::size_t>(counts_[unit]));
            s.reducing = unit;
            s.grads_of = -1;
            return;
        }
    MESHLM_CHECK(false, "FSDP: grads_done(", unit, ") without grads()");
}

}  // namespace meshlm
