// tokenizer.json "post_processor" for one sequence (encode with add_special_tokens=True):
// TemplateProcessing (its "single" template), BertProcessing, RobertaProcessing, ByteLevel (no
// change to ids) and Sequence of these. Anything else is refused by name.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "meshlm/data/hf/json_read.h"

namespace meshlm::hf {

class PostProcessor {
  public:
    // Special ids around the sequence: -1 in `items` stands for the sequence.
    explicit PostProcessor(std::vector<std::int32_t> items) : items_(std::move(items)) {}
    void process(std::vector<std::int32_t>& ids) const;
    const std::vector<std::int32_t>& items() const { return items_; }

  private:
    std::vector<std::int32_t> items_;
};

// null -> nullptr.
std::unique_ptr<PostProcessor> parse_post_processor(const Json& j, const Where& w);

}  // namespace meshlm::hf
