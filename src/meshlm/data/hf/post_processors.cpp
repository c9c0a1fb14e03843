// Post-processors (post_processors.h): every supported one reduces to a template of special ids
// around the sequence; a Sequence composes them in order.
#include "meshlm/data/hf/post_processors.h"

namespace meshlm::hf {

namespace {

constexpr const char* kSupported =
    "TemplateProcessing, BertProcessing, RobertaProcessing, ByteLevel, Sequence";

// [name, id] pairs of BertProcessing / RobertaProcessing.
std::int32_t pair_id(const Json& j, const char* key, const Where& w) {
    auto it = j.find(key);
    if (it == j.end() || !it->is_array() || it->size() != 2 || !(*it)[1].is_number_integer())
        w.at(key).fail("expected [token, id]");
    return (*it)[1].get<std::int32_t>();
}

std::vector<std::int32_t> template_items(const Json& j, const Where& w) {
    const Where ws = w.at("single");
    if (!j.contains("single") || !j["single"].is_array()) ws.fail("expected an array");
    const Json specials = j.value("special_tokens", Json::object());
    std::vector<std::int32_t> items;
    for (std::size_t i = 0; i < j["single"].size(); ++i) {
        const Json& it = j["single"][i];
        if (it.contains("Sequence")) {
            if (it["Sequence"].value("id", "A") != "A")
                ws.at(i).fail("a single-sequence template may only use sequence A");
            items.push_back(-1);
        } else if (it.contains("SpecialToken")) {
            const std::string name = it["SpecialToken"].value("id", "");
            if (!specials.contains(name) || !specials[name].contains("ids"))
                ws.at(i).fail("special token \"", name, "\" is not in special_tokens");
            for (const auto& id : specials[name]["ids"]) items.push_back(id.get<std::int32_t>());
        } else {
            ws.at(i).fail("expected {\"Sequence\": ...} or {\"SpecialToken\": ...}");
        }
    }
    return items;
}

// Applies `outer` to the template `inner` (Sequence: inner runs first).
std::vector<std::int32_t> compose(const std::vector<std::int32_t>& inner,
                                  const std::vector<std::int32_t>& outer) {
    std::vector<std::int32_t> out;
    for (const std::int32_t x : outer) {
        if (x == -1)
            out.insert(out.end(), inner.begin(), inner.end());
        else
            out.push_back(x);
    }
    return out;
}

std::vector<std::int32_t> parse_items(const Json& j, const Where& w) {
    const std::string type = json_type(j, w);
    if (type == "ByteLevel") return {-1};
    if (type == "TemplateProcessing") return template_items(j, w);
    if (type == "BertProcessing" || type == "RobertaProcessing")
        return {pair_id(j, "cls", w), -1, pair_id(j, "sep", w)};
    if (type == "Sequence") {
        const Where ws = w.at("processors");
        if (!j.contains("processors") || !j["processors"].is_array())
            ws.fail("expected an array of post-processors");
        std::vector<std::int32_t> items{-1};
        for (std::size_t i = 0; i < j["processors"].size(); ++i)
            items = compose(items, parse_items(j["processors"][i], ws.at(i)));
        return items;
    }
    w.refuse("post_processor", type, kSupported);
}

}  // namespace

void PostProcessor::process(std::vector<std::int32_t>& ids) const {
    ids = compose(ids, items_);
}

std::unique_ptr<PostProcessor> parse_post_processor(const Json& j, const Where& w) {
    if (j.is_null()) return nullptr;
    return std::make_unique<PostProcessor>(parse_items(j, w));
}

}  // namespace meshlm::hf
