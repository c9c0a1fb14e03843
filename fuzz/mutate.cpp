// replay.h mutate: the replay driver's built-in mutations (a small subset of libFuzzer's).
#include <algorithm>

#include "replay.h"

namespace meshlm::fuzz {
namespace {

std::size_t pick(std::mt19937_64& rng, std::size_t n) {  // [0, n)
    return n == 0 ? 0 : static_cast<std::size_t>(rng() % n);
}

// Bytes that sit on boundaries of the parsers' checks.
const unsigned char kInteresting[] = {0,   1,   0x7f, 0x80, 0xff, '"',  '\\', '{', '}',
                                      '[', ']', ',',  ':',  '-',  '\n', '0',  '9', 'e'};

}  // namespace

std::string mutate(const std::string& input, const std::string& other, std::mt19937_64& rng,
                   std::size_t max_size) {
    std::string s = input;
    const std::size_t at = pick(rng, s.size() + 1);
    const std::size_t len = 1 + pick(rng, std::min<std::size_t>(64, s.size() + 1));
    switch (pick(rng, 8)) {
        case 0:  // flip one bit
            if (!s.empty()) s[pick(rng, s.size())] ^= static_cast<char>(1u << pick(rng, 8));
            break;
        case 1:  // an interesting byte
            if (!s.empty())
                s[pick(rng, s.size())] =
                    static_cast<char>(kInteresting[pick(rng, sizeof kInteresting)]);
            break;
        case 2:  // truncate
            s.resize(pick(rng, s.size() + 1));
            break;
        case 3:  // insert random bytes
            for (std::size_t i = 0; i < len; ++i)
                s.insert(s.begin() + static_cast<std::ptrdiff_t>(at), static_cast<char>(rng()));
            break;
        case 4:  // duplicate a run
            s.insert(at, s.substr(pick(rng, s.size() + 1), len));
            break;
        case 5:  // erase a run
            s.erase(std::min(at, s.size()), len);
            break;
        case 6: {  // splice: our head, the other input's tail
            const std::size_t from = pick(rng, other.size() + 1);
            s = s.substr(0, at) + other.substr(from);
            break;
        }
        default:  // a run of digits (huge counts, sizes, offsets)
            s.replace(std::min(at, s.size()), 0, std::string(1 + pick(rng, 20), '9'));
            break;
    }
    if (s.size() > max_size) s.resize(max_size);
    return s;
}

}  // namespace meshlm::fuzz
