#include "meshlm/parallel/threads.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace meshlm {

namespace {
// One rank's record: host hash, then its affinity mask as 64-bit words.
constexpr int kMaskWords = CPU_SETSIZE / 64;
constexpr int kRecord = 1 + kMaskWords;

std::vector<std::int64_t> my_record() {
    std::vector<std::int64_t> rec(kRecord, 0);
    char host[HOST_NAME_MAX + 1] = {};
    gethostname(host, sizeof host - 1);
    rec[0] = static_cast<std::int64_t>(std::hash<std::string>{}(host));
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) return rec;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
        if (CPU_ISSET(cpu, &set))
            rec[1 + cpu / 64] = static_cast<std::int64_t>(
                static_cast<std::uint64_t>(rec[1 + cpu / 64]) | (std::uint64_t{1} << (cpu % 64)));
    return rec;
}
}  // namespace

int threads_per_rank(Comm& world) {
    const int n = world.size(), me = world.rank();
    std::vector<std::int64_t> all(static_cast<std::size_t>(kRecord) * n);
    const auto mine = my_record();
    std::copy(mine.begin(), mine.end(), all.begin() + static_cast<std::ptrdiff_t>(me) * kRecord);
    world.all_gather(all.data(), kRecord);
    int sharing = 0;
    for (int r = 0; r < n; ++r) {
        const std::int64_t* rec = all.data() + static_cast<std::ptrdiff_t>(r) * kRecord;
        if (rec[0] != mine[0]) continue;
        bool overlap = false;
        for (int w = 1; w < kRecord; ++w) overlap = overlap || (rec[w] & mine[w]) != 0;
        sharing += overlap || r == me;
    }
    return std::max(1, affinity_cpus() / std::max(1, sharing));
}

}  // namespace meshlm
