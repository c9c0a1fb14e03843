// A Hugging Face tokenizer.json as a meshlm Tokenizer: the pipeline of HF tokenizers 0.23
// (added tokens -> normalizer -> pre-tokenizer -> model -> post-processor; decoder), each stage
// in its own file of data/hf/. Components meshlm does not implement are refused by name when
// the file loads (file, JSON path, type, what is supported).
//
// encode(text) is HF's encode(text, add_special_tokens=False).ids: added and special tokens in
// the text are matched, nothing is added around it (what every meshlm caller wants: prepare,
// sample, serve and chat templates, which write BOS themselves). encode_for_model(text) is
// add_special_tokens=True: the post-processor's template (e.g. BOS) around it. For tokenizer
// classes whose transformers 4.x tokenizer rebuilt that template from tokenizer_config.json
// (LlamaTokenizer, CodeLlamaTokenizer, GemmaTokenizer, fast or not), the config's add_bos_token
// / add_eos_token beside tokenizer.json decide it instead (transformers 5 ignores them).
// decode(ids) is HF's decode(ids, skip_special_tokens=True), but keeps invalid UTF-8 as bytes.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "meshlm/data/hf/added_tokens.h"
#include "meshlm/data/hf/decoders.h"
#include "meshlm/data/hf/model.h"
#include "meshlm/data/hf/normalizers.h"
#include "meshlm/data/hf/post_processors.h"
#include "meshlm/data/hf/pre_tokenizers.h"
#include "meshlm/data/tokenizer.h"

namespace meshlm {

class HfTokenizer : public Tokenizer {
  public:
    // tokenizer.json at path (and tokenizer_config.json in its directory, when present).
    static std::unique_ptr<HfTokenizer> from_file(const std::string& path);
    // The texts of both files; name is used in messages; config_json may be empty.
    static std::unique_ptr<HfTokenizer> from_json(const std::string& json_text,
                                                  const std::string& name,
                                                  const std::string& config_json = "");

    std::vector<std::int32_t> encode(std::string_view text) const override;
    std::vector<std::int32_t> encode_for_model(std::string_view text) const override;
    void encode_into(std::string_view text, std::vector<std::int32_t>& out) const;
    std::string decode(const std::vector<std::int32_t>& ids) const override;
    int vocab_size() const override { return static_cast<int>(tokens_.size()); }
    std::int32_t eot_id() const override { return eot_id_; }
    std::string name() const override { return name_; }

    // Id of a token given as tokenizer.json writes it (added tokens included).
    std::optional<std::int32_t> token_id(std::string_view token) const;

  private:
    HfTokenizer() = default;
    void load(const hf::Json& j, const hf::Json& config);
    void load_added_tokens(const hf::Json& j, const hf::Where& w);
    // Refuses an id beyond id_limit_ (or negative), naming where it was read.
    void check_id(std::int32_t id, const hf::Where& w) const;
    void apply_config(const hf::Json& config);
    void encode_normalized(std::string_view seg, bool at_start,
                           std::vector<std::int32_t>& out) const;
    void encode_piece(const hf::Piece& p, std::vector<std::int32_t>& out) const;

    std::string name_;
    std::unique_ptr<hf::Normalizer> normalizer_;
    std::unique_ptr<hf::PreTokenizer> pre_tokenizer_;
    std::unique_ptr<hf::Model> model_;
    std::unique_ptr<hf::PostProcessor> post_;
    std::unique_ptr<hf::Decoder> decoder_;
    hf::AddedTokenMatcher raw_added_, normalized_added_;
    std::vector<std::string> tokens_;    // id -> token string ("" for unused ids)
    std::vector<std::uint8_t> special_;  // id -> 1 for special added tokens
    hf::StringIdMap token_ids_;          // token string -> id
    std::int32_t eot_id_ = -1;
    // The largest id accepted: the file's token count (vocab and added tokens) plus kIdGap.
    std::size_t id_limit_ = 0;
    static constexpr std::size_t kIdGap = 65536;
};

}  // namespace meshlm
