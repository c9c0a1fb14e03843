// How a flat buffer splits into per-rank chunks, and how many bytes each collective sends from
// one rank: the convention behind Comm::bytes_sent(), stated once so that tests, logs and
// theory agree.
//
// We count what a bandwidth-optimal ring algorithm logically sends per rank, whatever the
// backend really does (MPI may pick a tree for small messages). With N ranks and a buffer of
// n elements of s bytes:
//   all-reduce      2 · (n − c) · s   where c = this rank's chunk of n split evenly: a ring
//                   reduce-scatter then a ring all-gather; 2n(N−1)/N · s when N divides n.
//   reduce-scatter  (n − c) · s       n = the whole input, c = this rank's output chunk;
//                   n(N−1)/N · s for even chunks.
//   all-gather      (n − c) · s       n = the whole gathered buffer, c = this rank's chunk.
//   broadcast       n · s on every rank but the last of the pipeline chain that starts at
//                   root (rank (root − 1) mod N), which forwards nothing.
// Summed over ranks these are exactly the ring totals. One rank (N = 1) sends nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace meshlm {

// `total` split into `parts` chunks as evenly as possible: the first total % parts chunks get
// one element more.
std::vector<std::size_t> even_chunks(std::size_t total, int parts);
std::size_t even_chunk(std::size_t total, int parts, int index);   // size of chunk `index`
std::size_t even_offset(std::size_t total, int parts, int index);  // start of chunk `index`

std::uint64_t traffic_all_reduce(std::size_t n, int size, int rank, std::size_t elem_size);
std::uint64_t traffic_reduce_scatter(std::span<const std::size_t> counts, int rank,
                                     std::size_t elem_size);
std::uint64_t traffic_all_gather(std::span<const std::size_t> counts, int rank,
                                 std::size_t elem_size);
std::uint64_t traffic_broadcast(std::size_t n, int size, int rank, int root, std::size_t elem_size);

}  // namespace meshlm
