// Counter-based RNG (Philox 4x32-10). A stream is a pure function of (seed, key, counter), so
// randomness never depends on global state or thread scheduling: keys name what is drawn
// (e.g. a parameter index or a training step), counters index the draws.
#pragma once

#include <array>
#include <cstdint>

namespace meshlm {

std::array<std::uint32_t, 4> philox4x32(std::array<std::uint32_t, 4> counter,
                                        std::array<std::uint32_t, 2> key);

class Philox {
  public:
    Philox(std::uint64_t seed, std::uint64_t stream) : seed_(seed), stream_(stream) {}
    std::uint32_t next_u32();
    float uniform();          // [0, 1)
    double uniform_double();  // [0, 1), 53 bits
    float normal();           // standard normal (Box-Muller); one whole block (counter) per draw
    std::uint64_t below(std::uint64_t n);  // uniform in [0, n)
    std::uint64_t counter() const { return counter_; }
    void set_counter(std::uint64_t c) { counter_ = c, have_ = 0; }

  private:
    std::uint64_t seed_, stream_;
    std::uint64_t counter_ = 0;
    std::array<std::uint32_t, 4> block_{};
    int have_ = 0;
};

}  // namespace meshlm
