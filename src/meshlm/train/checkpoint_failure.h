// A checkpoint that cannot be written (full disk, I/O error; checkpoint.on_error). The writers
// (checkpoint.h, sharded_checkpoint.h) already leave the previous checkpoint and `latest` intact
// and remove their partial files; this says what happened, how much space the checkpoint
// needed against what the filesystem has (statvfs), and either stops the run or warns and lets
// it train on to the next checkpoint.
//
// exports: free_bytes, checkpoint_bytes_estimate, CheckpointAttempt, write_checkpoint_or_report
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>

namespace meshlm {

// Bytes an unprivileged writer may still use on the filesystem holding `path` (or its nearest
// existing parent): statvfs's f_bavail x f_frsize. nullopt when statvfs fails.
std::optional<std::uint64_t> free_bytes(const std::string& path);

// About what a checkpoint of `params` floats takes: the parameters, `slots` optimizer slots of
// the same size and `stat_floats` statistics, plus headers and small files.
std::uint64_t checkpoint_bytes_estimate(std::size_t params, int slots, std::size_t stat_floats);

struct CheckpointAttempt {
    std::string run_dir;
    long step = 0;
    std::uint64_t bytes_needed = 0;  // checkpoint_bytes_estimate
    std::string on_error = "stop";   // checkpoint.on_error: stop | continue
    bool must = false;               // a checkpoint the run stops after anyway (signal, halt)
    long next_step = 0;              // when the next one is due (continue's warning); 0 = none
};

// Runs `write` (which returns the checkpoint directory). On failure: with on_error stop, or a
// checkpoint that `must` be written, throws Error saying why, bytes needed vs free, and that the
// previous checkpoint is intact; with continue, prints that as a warning to `out` and returns
// nullopt. Every rank of a job gets the same failure from the collective writers, so all decide
// alike.
std::optional<std::string> write_checkpoint_or_report(const std::function<std::string()>& write,
                                                      const CheckpointAttempt& attempt,
                                                      std::ostream& out);

}  // namespace meshlm
