// Test hook: a file write that fails as a full or broken disk would, at a chosen file and byte.
//   MESHLM_FAULT_WRITE=ENOSPC:step_4/optimizer        the first write to a file whose path
//                                                     contains "step_4/optimizer" fails with
//                                                     ENOSPC ("No space left on device")
//   MESHLM_FAULT_WRITE=EIO:shard-d1-m0:4096           bytes up to offset 4096 are written, the
//                                                     write that would pass it fails with EIO
// Errors: ENOSPC, EIO, EDQUOT, EFBIG. Unset (the normal case): nothing happens. AtomicFile
// (atomic_file.h) consults it, so every file of a checkpoint (shards included), `latest` and the
// one-process model.safetensors can be made to fail (not the multi-rank final_weights.h writer).
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace meshlm {

struct WriteFault {
    int error = 0;       // errno to fail with
    std::size_t at = 0;  // bytes of the file written before the failing write
};

// The fault MESHLM_FAULT_WRITE asks for on `path`, if any. Throws Error for a malformed value.
std::optional<WriteFault> write_fault_for(const std::string& path);

}  // namespace meshlm
