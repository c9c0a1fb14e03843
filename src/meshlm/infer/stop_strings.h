// Stop strings over streamed text: text goes in as it is decoded, and what comes out is safe to
// show. Once a stop string appears, output ends just before it. Only the bytes that could still
// begin a stop string (the longest suffix that is a prefix of one) are held back.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace meshlm {

class StopStrings {
  public:
    explicit StopStrings(std::vector<std::string> stops);  // empty strings are ignored

    // Appends `piece` and returns the text now safe to emit (nothing once stopped()).
    std::string feed(std::string_view piece);
    // The held-back bytes, at the end of the text (nothing once stopped()).
    std::string flush();
    bool stopped() const { return stopped_; }

  private:
    std::vector<std::string> stops_;
    std::string pending_;  // text not emitted yet: a possible start of a stop string
    bool stopped_ = false;
};

}  // namespace meshlm
