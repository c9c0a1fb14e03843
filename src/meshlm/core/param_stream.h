// Parameters that arrive a unit at a time. A flat layout (whole or a tensor-parallel shard)
// splits into contiguous units (ParamLayout::unit_range): unit 0 = the embeddings, unit 1 + l =
// block l, the last = the final norm and the head. A model given a ParamStream acquires each
// block's unit just before using it and releases it right after, in forward and again in
// backward, and hands each block's gradients over as soon as they are final -- so sharded
// training (FSDP, ZeRO stage 3) holds only a few blocks of parameters and gradients at a time
// instead of the whole model.
#pragma once

namespace meshlm {

class ParamStream {
  public:
    enum class Pass { forward, backward };
    virtual ~ParamStream() = default;
    // Address of unit `unit`'s first parameter (laid out as its range of the flat buffer), valid
    // until release(unit). The first and last units (embeddings, final norm and head) are
    // acquired at the start of every forward and backward and never released by the model: the
    // stream keeps them.
    virtual const float* acquire(int unit, Pass pass) = 0;
    virtual void release(int unit) = 0;
    // Where backward accumulates (+=) the unit's gradients, laid out like its parameters; after
    // grads_done(unit) the model no longer touches them.
    virtual float* grads(int unit) = 0;
    virtual void grads_done(int unit) = 0;
};

}  // namespace meshlm
