// The tokenizer side of a Hugging Face model directory, carried by `meshlm convert` both ways:
// tokenizer.json, tokenizer_config.json (special tokens, chat template), special_tokens_map.json
// and generation_config.json (eos_token_id list).
//
// Import copies them into the run directory, where `serve` and `sample --chat` find the chat
// template and the end-of-turn ids (run_dir.h chat_config_dirs). Export copies the run's own;
// a run with none (trained by meshlm) gets them written: tokenizer.json (the byte tokenizer's,
// data/byte_tokenizer_json.h, for a byte-level run), and a tokenizer_config.json and
// special_tokens_map.json whose BOS, EOS and pad tokens are the end-of-text token and whose chat
// template is the one `serve` uses for it (ChatML), so transformers' AutoTokenizer and
// apply_chat_template see what meshlm does.
//
// exports: kHfTokenizerSideFiles, copy_hf_tokenizer_files, HfTokenizerSource,
//          write_hf_tokenizer_files
#pragma once

#include <array>
#include <string>
#include <vector>

namespace meshlm {

// The files besides tokenizer.json, in the order they are looked for.
inline constexpr std::array<const char*, 3> kHfTokenizerSideFiles = {
    "tokenizer_config.json", "special_tokens_map.json", "generation_config.json"};

// HF -> meshlm: copies those of kHfTokenizerSideFiles that `in` has into `out`; returns their
// names. A file that is not valid JSON is refused, naming it, before anything is copied.
std::vector<std::string> copy_hf_tokenizer_files(const std::string& in, const std::string& out);

// What an export knows of the run's tokenizer.
struct HfTokenizerSource {
    std::string spec;               // "byte", a tokenizer.json path, or another tokenizer file
    int eot_id = -1;                // the end-of-text id (-1: none)
    int model_max_length = 0;       // the model's context
    std::vector<std::string> dirs;  // where the run's own side files may be, first wins
};

// meshlm -> HF: writes tokenizer.json and the side files into `dir` (generation_config.json only
// when the run has its own: write_hf_model writes the default). Returns what was done, for the
// command's summary line.
std::string write_hf_tokenizer_files(const std::string& dir, const HfTokenizerSource& src);

}  // namespace meshlm
