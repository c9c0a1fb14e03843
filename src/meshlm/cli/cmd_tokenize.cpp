// meshlm tokenize --tokenizer SPEC [--decode]
// Encode: each stdin line (without its '\n') -> its ids, space-separated, one output line.
// Decode: each stdin line of ids -> the text, one output line.
#include <iostream>
#include <sstream>
#include <string>

#include "meshlm/cli/commands.h"
#include "meshlm/cli/overrides.h"
#include "meshlm/core/error.h"
#include "meshlm/data/tokenizer.h"

namespace meshlm {

namespace {
struct TokenizeArgs {
    std::string tokenizer;
    bool decode = false;
};
}  // namespace

CommandRunner add_tokenize_command(CLI::App& app, const std::vector<std::string>& overrides) {
    auto* cmd = app.add_subcommand("tokenize", "Encode stdin lines to ids (or decode ids)");
    auto a = std::make_shared<TokenizeArgs>();
    cmd->add_option("--tokenizer", a->tokenizer,
                    "byte, a HF tokenizer.json or a .tiktoken rank file")
        ->required();
    cmd->add_flag("--decode", a->decode, "read lines of space-separated ids, print the text");
    return [a, &overrides] {
        require_used_overrides(overrides, "meshlm tokenize", {});
        auto tok = make_tokenizer(a->tokenizer);
        std::ios::sync_with_stdio(false);
        std::string line, out;
        std::vector<std::int32_t> ids;
        std::size_t line_no = 0;
        while (std::getline(std::cin, line)) {
            ++line_no;
            out.clear();
            if (a->decode) {
                ids.clear();
                std::istringstream ss(line);
                std::string word;
                while (ss >> word) {
                    std::size_t used = 0;
                    long long v = -1;
                    try {
                        v = std::stoll(word, &used);
                    } catch (const std::exception&) {
                    }
                    if (used != word.size() || v < 0 || v >= tok->vocab_size())
                        MESHLM_INVALID("stdin line ", line_no, ": '", word,
                                       "' is not a token id (0..", tok->vocab_size() - 1, ")");
                    ids.push_back(static_cast<std::int32_t>(v));
                }
                out = tok->decode(ids);
            } else {
                for (auto id : tok->encode(line)) {
                    if (!out.empty()) out.push_back(' ');
                    out += std::to_string(id);
                }
            }
            out.push_back('\n');
            std::cout << out;
        }
        std::cout.flush();
        return 0;
    };
}

}  // namespace meshlm
