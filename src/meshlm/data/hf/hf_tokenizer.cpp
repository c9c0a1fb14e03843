// HfTokenizer (hf_tokenizer.h): loading tokenizer.json and running the pipeline.
#include "meshlm/data/hf/hf_tokenizer.h"

#include <filesystem>

namespace meshlm {

using hf::Json;
using hf::Where;

namespace {

// bos_token / eos_token of tokenizer_config.json: a string or {"content": ...}.
std::string config_token(const Json& config, const char* key) {
    auto it = config.find(key);
    if (it == config.end()) return "";
    if (it->is_string()) return it->get<std::string>();
    if (it->is_object() && it->contains("content") && (*it)["content"].is_string())
        return (*it)["content"].get<std::string>();
    return "";
}

}  // namespace

std::unique_ptr<HfTokenizer> HfTokenizer::from_file(const std::string& path) {
    const auto cfg = std::filesystem::path(path).parent_path() / "tokenizer_config.json";
    std::string config;
    if (std::filesystem::exists(cfg)) {
        config = read_tokenizer_file(cfg.string());
        const Json c = Json::parse(config, nullptr, false);
        if (c.is_discarded() || !c.is_object()) MESHLM_INVALID(cfg.string(), ": not a JSON object");
    }
    return from_json(read_tokenizer_file(path), path, config);
}

std::unique_ptr<HfTokenizer> HfTokenizer::from_json(const std::string& json_text,
                                                    const std::string& name,
                                                    const std::string& config_json) {
    std::unique_ptr<HfTokenizer> t(new HfTokenizer);
    t->name_ = name;
    Json j, config = Json::object();
    try {
        j = Json::parse(json_text);
        if (!config_json.empty()) config = Json::parse(config_json);
    } catch (const Json::exception& e) {
        MESHLM_INVALID(name, ": not valid JSON: ", e.what());
    }
    if (!j.is_object() || !j.contains("model") || !j["model"].is_object())
        MESHLM_INVALID(name, ": no \"model\" object; not a tokenizer.json");
    try {
        t->load(j, config);
    } catch (const Json::exception& e) {
        MESHLM_INVALID(name, ": malformed tokenizer.json: ", e.what());
    }
    return t;
}

void HfTokenizer::load(const Json& j, const Json& config) {
    const Where top{name_, ""};
    for (const char* k : {"truncation", "padding"})
        if (j.contains(k) && !j[k].is_null())
            top.at(k).fail("is not supported (must be null): meshlm never truncates or pads");
    bool byte_level = false;
    normalizer_ = hf::parse_normalizer(j.value("normalizer", Json()), top.at("normalizer"));
    pre_tokenizer_ = hf::parse_pre_tokenizer(j.value("pre_tokenizer", Json()),
                                             top.at("pre_tokenizer"), byte_level);
    model_ = hf::parse_model(j["model"], top.at("model"), byte_level);
    post_ = hf::parse_post_processor(j.value("post_processor", Json()), top.at("post_processor"));
    decoder_ = hf::parse_decoder(j.value("decoder", Json()), top.at("decoder"));
    // Ids may exceed the file's token count by at most kIdGap: a 20-byte file must not ask for
    // a table of 2^31 ids (found by fuzz/tokenizer_json.cpp).
    const auto vocab = model_->vocab();
    const Json added = j.value("added_tokens", Json::array());
    id_limit_ = vocab.size() + (added.is_array() ? added.size() : 0) + kIdGap;
    for (auto& [tok, id] : vocab) {
        check_id(id, top.at("model").at("vocab").at(tok));
        if (static_cast<std::size_t>(id) >= tokens_.size()) tokens_.resize(id + 1);
        tokens_[id] = tok;
        token_ids_[tok] = id;
    }
    load_added_tokens(j.value("added_tokens", Json::array()), top.at("added_tokens"));
    special_.resize(tokens_.size(), 0);
    for (const char* eot : {"<|endoftext|>", "</s>", "<|end_of_text|>", "<eos>", "[SEP]"})
        if (auto id = token_id(eot); id && eot_id_ < 0) eot_id_ = *id;
    if (auto id = token_id(config_token(config, "eos_token")); id && eot_id_ < 0) eot_id_ = *id;
    if (eot_id_ < 0)
        MESHLM_INVALID(name_,
                       ": no end-of-text token (one of <|endoftext|>, </s>, <|end_of_text|>, "
                       "<eos>, [SEP], or tokenizer_config.json's eos_token)");
    apply_config(config);
}

void HfTokenizer::check_id(std::int32_t id, const Where& w) const {
    if (id < 0 || static_cast<std::size_t>(id) > id_limit_)
        w.fail("id " + std::to_string(id) + " is out of range: the file declares " +
               std::to_string(id_limit_ - kIdGap) +
               " tokens, and ids may exceed that count by at most " + std::to_string(kIdGap));
}

void HfTokenizer::load_added_tokens(const Json& list, const Where& w) {
    if (!list.is_array()) w.fail("expected an array");
    for (std::size_t i = 0; i < list.size(); ++i) {
        const Json& a = list[i];
        const Where wi = w.at(i);
        hf::AddedToken t{
            hf::json_string(a, "content", "", wi),
            static_cast<std::int32_t>(hf::json_int(a, "id", -1, wi)),
            hf::json_bool(a, "special", false, wi),
            hf::json_bool(a, "lstrip", false, wi),
            hf::json_bool(a, "rstrip", false, wi),
            hf::json_bool(a, "normalized", !hf::json_bool(a, "special", false, wi), wi),
            hf::json_bool(a, "single_word", false, wi)};
        if (t.id < 0 || t.content.empty()) wi.fail("needs a content and an id >= 0");
        check_id(t.id, wi.at("id"));
        if (static_cast<std::size_t>(t.id) >= tokens_.size()) tokens_.resize(t.id + 1);
        special_.resize(tokens_.size(), 0);
        tokens_[t.id] = t.content;
        token_ids_[t.content] = t.id;
        special_[t.id] = t.special ? 1 : 0;
        if (t.normalized) {
            std::string text = t.content;
            if (normalizer_) normalizer_->normalize(text);
            normalized_added_.add(std::move(text), t);
        } else {
            raw_added_.add(t.content, t);
        }
    }
}

void HfTokenizer::apply_config(const Json& config) {
    const std::string cls = config.value("tokenizer_class", "");
    static const char* kRebuilding[] = {"LlamaTokenizer",     "LlamaTokenizerFast",
                                        "CodeLlamaTokenizer", "CodeLlamaTokenizerFast",
                                        "GemmaTokenizer",     "GemmaTokenizerFast"};
    bool rebuilds = false;
    for (const char* c : kRebuilding) rebuilds = rebuilds || cls == c;
    const bool has_bos = config.contains("add_bos_token") && config["add_bos_token"].is_boolean();
    const bool has_eos = config.contains("add_eos_token") && config["add_eos_token"].is_boolean();
    if (!rebuilds || (!has_bos && !has_eos)) return;
    std::vector<std::int32_t> items;
    auto add = [&](const char* flag, bool dflt, const char* key) {
        const bool on = config.contains(flag) ? config[flag].get<bool>() : dflt;
        if (!on) return;
        const auto id = token_id(config_token(config, key));
        if (!id)
            MESHLM_INVALID(name_, ": tokenizer_config.json: ", flag, " is true but ", key,
                           " is not a token");
        items.push_back(*id);
    };
    add("add_bos_token", true, "bos_token");
    items.push_back(-1);
    add("add_eos_token", false, "eos_token");
    post_ = std::make_unique<hf::PostProcessor>(std::move(items));
}

std::optional<std::int32_t> HfTokenizer::token_id(std::string_view token) const {
    auto it = token_ids_.find(token);
    if (it == token_ids_.end()) return std::nullopt;
    return it->second;
}

void HfTokenizer::encode_piece(const hf::Piece& p, std::vector<std::int32_t>& out) const {
    if (p.text.empty()) return;  // HF drops empty pieces before pre-tokenizing
    if (!pre_tokenizer_) return model_->tokenize(p.text, out);
    pre_tokenizer_->split(p, [&](const hf::Piece& q) { model_->tokenize(q.text, out); });
}

void HfTokenizer::encode_normalized(std::string_view seg, bool at_start,
                                    std::vector<std::int32_t>& out) const {
    if (normalized_added_.empty()) return encode_piece(hf::Piece{seg, at_start}, out);
    normalized_added_.split(
        seg,
        [&](std::size_t b, std::size_t e) {
            encode_piece(hf::Piece{seg.substr(b, e - b), at_start && b == 0}, out);
        },
        [&](std::int32_t id) { out.push_back(id); });
}

void HfTokenizer::encode_into(std::string_view text, std::vector<std::int32_t>& out) const {
    auto segment = [&](std::string_view seg, bool at_start) {
        if (!normalizer_) return encode_normalized(seg, at_start, out);
        std::string s(seg);
        normalizer_->normalize(s);
        encode_normalized(s, at_start, out);
    };
    if (raw_added_.empty()) {
        if (!text.empty()) segment(text, true);
        return;
    }
    raw_added_.split(
        text, [&](std::size_t b, std::size_t e) { segment(text.substr(b, e - b), b == 0); },
        [&](std::int32_t id) { out.push_back(id); });
}

std::vector<std::int32_t> HfTokenizer::encode(std::string_view text) const {
    std::vector<std::int32_t> out;
    out.reserve(text.size() / 3 + 4);
    encode_into(text, out);
    return out;
}

std::vector<std::int32_t> HfTokenizer::encode_for_model(std::string_view text) const {
    std::vector<std::int32_t> out = encode(text);
    if (post_) post_->process(out);
    return out;
}

std::string HfTokenizer::decode(const std::vector<std::int32_t>& ids) const {
    std::vector<std::string> toks;
    toks.reserve(ids.size());
    for (const std::int32_t id : ids)
        if (id >= 0 && static_cast<std::size_t>(id) < tokens_.size() && !special_[id] &&
            !tokens_[id].empty())
            toks.push_back(tokens_[id]);
    if (decoder_) decoder_->decode_chain(toks);
    std::string out;
    for (std::size_t i = 0; i < toks.size(); ++i) {
        if (i > 0 && !decoder_) out.push_back(' ');
        out += toks[i];
    }
    return out;
}

}  // namespace meshlm
