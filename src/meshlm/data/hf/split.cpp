// SplitDelimiterBehavior (split.h), after tokenizers/src/tokenizer/normalizer.rs
// NormalizedString::split.
#include "meshlm/data/hf/split.h"

namespace meshlm::hf {

SplitBehavior parse_split_behavior(std::string_view name, const Where& w) {
    if (name == "Removed") return SplitBehavior::Removed;
    if (name == "Isolated") return SplitBehavior::Isolated;
    if (name == "MergedWithPrevious") return SplitBehavior::MergedWithPrevious;
    if (name == "MergedWithNext") return SplitBehavior::MergedWithNext;
    if (name == "Contiguous") return SplitBehavior::Contiguous;
    w.fail("split behavior \"", name,
           "\" is not supported; supported: Removed, Isolated, MergedWithPrevious, "
           "MergedWithNext, Contiguous");
}

namespace {

struct Span {
    std::size_t b, e;
    bool match;
};

// The matches and the gaps between them, covering the whole text (HF Pattern::find_matches).
std::vector<Span> spans_of(std::size_t size, const Matches& matches, bool invert) {
    std::vector<Span> s;
    s.reserve(2 * matches.size() + 1);
    std::size_t prev = 0;
    for (const auto& [b, e] : matches) {
        if (prev != b) s.push_back({prev, b, invert});
        s.push_back({b, e, !invert});
        prev = e;
    }
    if (prev != size) s.push_back({prev, size, invert});
    return s;
}

std::vector<Span> apply_behavior(std::vector<Span> s, SplitBehavior behavior) {
    std::vector<Span> out;
    out.reserve(s.size());
    bool previous_match = false;
    switch (behavior) {
        case SplitBehavior::Isolated:
            return s;
        case SplitBehavior::Removed:
            for (const Span& x : s)
                if (!x.match) out.push_back(x);
            return out;
        case SplitBehavior::Contiguous:
            for (const Span& x : s) {
                if (x.match == previous_match && !out.empty())
                    out.back().e = x.e;
                else
                    out.push_back(x);
                previous_match = x.match;
            }
            return out;
        case SplitBehavior::MergedWithPrevious:
            for (const Span& x : s) {
                if (x.match && !previous_match && !out.empty())
                    out.back().e = x.e;
                else
                    out.push_back(x);
                previous_match = x.match;
            }
            return out;
        case SplitBehavior::MergedWithNext:
            for (auto it = s.rbegin(); it != s.rend(); ++it) {
                if (it->match && !previous_match && !out.empty())
                    out.back().b = it->b;
                else
                    out.push_back(*it);
                previous_match = it->match;
            }
            return {out.rbegin(), out.rend()};
    }
    return s;
}

}  // namespace

void split_by_matches(const Piece& in, const Matches& matches, SplitBehavior behavior, bool invert,
                      PieceSink out) {
    for (const Span& x : apply_behavior(spans_of(in.text.size(), matches, invert), behavior))
        if (x.e > x.b) out(Piece{in.text.substr(x.b, x.e - x.b), in.at_start && x.b == 0});
}

}  // namespace meshlm::hf
