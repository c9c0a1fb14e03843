// Parameters that arrive a unit at a time. A GPT-2 flat layout (whole or a tensor-parallel
// shard) splits into contiguous units: unit 0 = wte and wpe, unit 1 + l = block l, unit L + 1 =
// ln_f. A model given a ParamStream acquires each block's unit just before using it and releases
// it right after, in forward and again in backward, and hands each block's gradients over as
// soon as they are final -- so sharded training (FSDP, ZeRO stage 3) holds only a few blocks of
// parameters and gradients at a time instead of the whole model.
#pragma once

#include <cstddef>
#include <utility>

#include "meshlm/model/gpt2_weights.h"
#include "meshlm/model/param_layout.h"

namespace meshlm {

class ParamStream {
  public:
    enum class Pass { forward, backward };
    virtual ~ParamStream() = default;
    // Address of unit `unit`'s first parameter (laid out as its range of the flat buffer), valid
    // until release(unit). Units 0 and L + 1 (embeddings, ln_f) are acquired at the start of
    // every forward and backward and never released by the model: the stream keeps them.
    virtual const float* acquire(int unit, Pass pass) = 0;
    virtual void release(int unit) = 0;
    // Where backward accumulates (+=) the unit's gradients, laid out like its parameters; after
    // grads_done(unit) the model no longer touches them.
    virtual float* grads(int unit) = 0;
    virtual void grads_done(int unit) = 0;
};

// Units of a GPT-2 layout (gpt2_layout or tp_local_layout): n_layer + 2.
int gpt2_unit_count(const ParamLayout& layout);
// [begin, end) of unit `unit` in the flat buffer (the alignment padding between its slices
// included).
std::pair<std::size_t, std::size_t> gpt2_unit_range(const ParamLayout& layout, int unit);
// Points the tensors of unit `unit` in `w` at `base`, the address of the unit's first element.
void bind_unit(const ParamLayout& layout, int unit, float* base, GPT2Weights& w);

// The parameter and gradient views of one model call, from flat buffers or from a stream. The
// models call begin() at the start of forward / backward and around each block
// begin_block() / end_block(); backward also head_done() once ln_f's gradients are complete and
// embeddings_done() at its end. Without a stream all of these only bind once.
class WeightViews {
  public:
    WeightViews(const ParamLayout& layout, int n_layer);

    void set_stream(ParamStream* stream) { stream_ = stream; }
    ParamStream* stream() const { return stream_; }

    // grads == nullptr in forward. With a stream, params and grads are ignored.
    void begin(const float* params, float* grads, ParamStream::Pass pass);
    void begin_block(int layer, ParamStream::Pass pass);
    void end_block(int layer, ParamStream::Pass pass);
    void head_done();
    void embeddings_done();

    GPT2Weights w, g;  // parameters, gradients (backward)

  private:
    const ParamLayout& layout_;
    int n_layer_;
    ParamStream* stream_ = nullptr;
};

}  // namespace meshlm
