// Fault injection, to test that one failing rank takes the whole job down cleanly. Code calls
// fault_point() at the places a failure should be testable (e.g. the trainer once per step);
// it does nothing unless the environment asks for a fault there:
//   MESHLM_FAULT_RANK=1 MESHLM_FAULT_AT=train_step:3   → throws on world rank 1 at step 3
//   MESHLM_FAULT_RANK=1 MESHLM_FAULT_AT=train_step     → throws on rank 1 at its first call
//   MESHLM_FAULT_RANK=all                              → every rank
//   MESHLM_FAULT_KIND=hang                              → hangs there instead of throwing (tests
//                                                         the collective timeout of the others)
#pragma once

#include <string_view>

namespace meshlm {

// Throws meshlm::Error("injected fault at POINT[:STEP] on rank R") (or hangs, see above) if
// MESHLM_FAULT_RANK is `world_rank` (or all) and MESHLM_FAULT_AT is `point` or `point:step`.
void fault_point(int world_rank, std::string_view point, long step = -1);

}  // namespace meshlm
