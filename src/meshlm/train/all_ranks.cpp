#include "meshlm/train/all_ranks.h"

#include <cstdint>

#include "meshlm/core/error.h"

namespace meshlm {

std::optional<std::string> capture(const std::function<void()>& f) {
    try {
        f();
        return std::nullopt;
    } catch (const std::exception& e) {
        return std::string(e.what());
    }
}

void throw_if_any_failed(Comm& world, const std::optional<std::string>& err,
                         const std::string& context, const std::function<void()>& cleanup) {
    std::int32_t first = err ? world.rank() : world.size();
    world.all_reduce_min(&first, 1);
    if (first == world.size()) return;
    std::int64_t n = world.rank() == first ? static_cast<std::int64_t>(err->size()) : 0;
    world.broadcast(&n, 1, first);
    std::string msg(static_cast<std::size_t>(n), ' ');
    if (world.rank() == first) msg = *err;
    if (n > 0) world.broadcast_bytes(msg.data(), msg.size(), first);
    if (cleanup) {
        cleanup();
        world.barrier();
    }
    if (context.empty()) throw InvalidInput(msg);
    throw Error(detail::concat(context, " failed on rank ", first, ": ", msg));
}

}  // namespace meshlm
