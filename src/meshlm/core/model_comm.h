// The collectives a tensor-parallel layer calls, over the model ranks that share one replica of
// the model. The model sees only this; parallel/ implements it over a Comm. With one model rank
// (SingleRank) every call is a no-op, so the same layer code runs sharded or not.
#pragma once

#include <cstddef>

namespace meshlm {

class ModelComm {
  public:
    virtual ~ModelComm() = default;
    virtual int size() const = 0;
    virtual int rank() const = 0;
    // In place over every model rank: element-wise sum / max.
    virtual void sum(float* x, std::size_t n) = 0;
    virtual void max(float* x, std::size_t n) = 0;
};

class SingleRank final : public ModelComm {
  public:
    int size() const override { return 1; }
    int rank() const override { return 0; }
    void sum(float*, std::size_t) override {}
    void max(float*, std::size_t) override {}
};

}  // namespace meshlm
