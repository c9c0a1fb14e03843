#include "meshlm/data/byte_tokenizer_json.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace meshlm {

namespace {

using ojson = nlohmann::ordered_json;

// Byte b's ByteLevel character (GPT-2's bytes_to_unicode) in UTF-8: printable bytes stand for
// themselves, the other 68 are U+0100.. in increasing byte order (all below U+0800).
std::string byte_level_char(int b, int& next_extra) {
    const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
    const int cp = printable ? b : 256 + next_extra++;
    if (cp < 0x80) return std::string(1, static_cast<char>(cp));
    return {static_cast<char>(0xC0 | (cp >> 6)), static_cast<char>(0x80 | (cp & 0x3F))};
}

ojson byte_tokenizer() {
    ojson vocab = ojson::object();
    int extra = 0;
    for (int b = 0; b < 256; ++b) vocab[byte_level_char(b, extra)] = b;
    const ojson eot = {{"id", 256},       {"content", kByteEotToken}, {"single_word", false},
                       {"lstrip", false}, {"rstrip", false},          {"normalized", false},
                       {"special", true}};
    auto byte_level = [](bool use_regex, bool prefix) {
        return ojson{{"type", "ByteLevel"},
                     {"add_prefix_space", prefix},
                     {"trim_offsets", true},
                     {"use_regex", use_regex}};
    };
    return {{"version", "1.0"},
            {"truncation", nullptr},
            {"padding", nullptr},
            {"added_tokens", ojson::array({eot})},
            {"normalizer", nullptr},
            {"pre_tokenizer", byte_level(false, false)},
            {"post_processor", nullptr},
            // The decoder's options do not change decoding; these are HF's defaults.
            {"decoder", byte_level(true, true)},
            {"model",
             {{"type", "BPE"},
              {"dropout", nullptr},
              {"unk_token", nullptr},
              {"continuing_subword_prefix", nullptr},
              {"end_of_word_suffix", nullptr},
              {"fuse_unk", false},
              {"byte_fallback", false},
              {"ignore_merges", false},
              {"vocab", vocab},
              {"merges", ojson::array()}}}};
}

}  // namespace

std::string byte_tokenizer_json() {
    return byte_tokenizer().dump(2);
}

bool is_byte_tokenizer_json(const std::string& path) {
    // The byte tokenizer's file is 5 KB: a larger one (a real vocabulary) is not parsed twice.
    std::error_code ec;
    if (std::filesystem::file_size(path, ec) > (64u << 10) || ec) return false;
    std::ifstream in(path, std::ios::binary);
    if (!in) return false;
    std::stringstream ss;
    ss << in.rdbuf();
    const nlohmann::json j = nlohmann::json::parse(ss.str(), nullptr, false);
    return !j.is_discarded() && j == nlohmann::json::parse(byte_tokenizer_json());
}

}  // namespace meshlm
