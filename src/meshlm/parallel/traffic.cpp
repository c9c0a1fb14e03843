#include "meshlm/parallel/traffic.h"

#include <algorithm>
#include <numeric>

namespace meshlm {

std::vector<std::size_t> even_chunks(std::size_t total, int parts) {
    std::vector<std::size_t> out(parts);
    for (int i = 0; i < parts; ++i) out[i] = even_chunk(total, parts, i);
    return out;
}

std::size_t even_chunk(std::size_t total, int parts, int index) {
    const std::size_t p = static_cast<std::size_t>(parts), i = static_cast<std::size_t>(index);
    return total / p + (i < total % p ? 1 : 0);
}

std::size_t even_offset(std::size_t total, int parts, int index) {
    const std::size_t p = static_cast<std::size_t>(parts), i = static_cast<std::size_t>(index);
    return i * (total / p) + std::min(i, total % p);
}

std::uint64_t traffic_all_reduce(std::size_t n, int size, int rank, std::size_t elem_size) {
    return 2 * static_cast<std::uint64_t>(n - even_chunk(n, size, rank)) * elem_size;
}

std::uint64_t traffic_reduce_scatter(std::span<const std::size_t> counts, int rank,
                                     std::size_t elem_size) {
    const std::size_t total = std::accumulate(counts.begin(), counts.end(), std::size_t{0});
    return static_cast<std::uint64_t>(total - counts[rank]) * elem_size;
}

std::uint64_t traffic_all_gather(std::span<const std::size_t> counts, int rank,
                                 std::size_t elem_size) {
    return traffic_reduce_scatter(counts, rank, elem_size);
}

std::uint64_t traffic_broadcast(std::size_t n, int size, int rank, int root,
                                std::size_t elem_size) {
    const int last = (root + size - 1) % size;
    return size == 1 || rank == last ? 0 : static_cast<std::uint64_t>(n) * elem_size;
}

}  // namespace meshlm
