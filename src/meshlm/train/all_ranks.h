// Errors in collective work: a rank that fails must fail every rank alike, with the real cause,
// and never leave the others waiting in a collective.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "meshlm/parallel/comm.h"

namespace meshlm {

// Runs f; returns its error message instead of throwing.
std::optional<std::string> capture(const std::function<void()>& f);

// Collective: when any rank's `err` is set, every rank throws the lowest failing rank's
// message, so the whole job fails alike with the real cause: an InvalidInput (reported once,
// by rank 0) when `context` is empty, else an Error "<context> failed on rank R: <message>".
// `cleanup` runs first, and no rank throws (and so aborts the job) before it is done.
void throw_if_any_failed(Comm& world, const std::optional<std::string>& err,
                         const std::string& context, const std::function<void()>& cleanup = {});

}  // namespace meshlm
