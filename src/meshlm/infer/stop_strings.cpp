#include "meshlm/infer/stop_strings.h"

#include <algorithm>

namespace meshlm {

StopStrings::StopStrings(std::vector<std::string> stops) {
    for (auto& s : stops)
        if (!s.empty()) stops_.push_back(std::move(s));
}

std::string StopStrings::feed(std::string_view piece) {
    if (stopped_) return {};
    pending_ += piece;
    // Earliest stop string: everything before pending_ was checked already and cannot be the
    // start of a match (it would have been held back).
    std::size_t cut = std::string::npos;
    for (const auto& s : stops_) cut = std::min(cut, pending_.find(s));
    if (cut != std::string::npos) {
        stopped_ = true;
        std::string out = pending_.substr(0, cut);
        pending_.clear();
        return out;
    }
    // Hold back the longest suffix that is a proper prefix of some stop string.
    std::size_t hold = 0;
    for (const auto& s : stops_) {
        const std::size_t max_len = std::min(s.size() - 1, pending_.size());
        for (std::size_t len = max_len; len > hold; --len)
            if (pending_.compare(pending_.size() - len, len, s, 0, len) == 0) {
                hold = len;
                break;
            }
    }
    std::string out = pending_.substr(0, pending_.size() - hold);
    pending_.erase(0, pending_.size() - hold);
    return out;
}

std::string StopStrings::flush() {
    std::string out;
    if (!stopped_) out.swap(pending_);
    return out;
}

}  // namespace meshlm
