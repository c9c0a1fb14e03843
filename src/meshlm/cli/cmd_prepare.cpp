// meshlm prepare --input PATH... --tokenizer SPEC --out DIR [reader, split and shard flags]
#include <filesystem>
#include <iostream>

#include "meshlm/cli/commands.h"
#include "meshlm/cli/config.h"
#include "meshlm/cli/corpus_flags.h"
#include "meshlm/cli/overrides.h"
#include "meshlm/cli/validators.h"
#include "meshlm/core/error.h"
#include "meshlm/data/prepare.h"
#include "meshlm/data/tokenizer.h"

namespace meshlm {

namespace {
struct PrepareArgs {
    std::vector<std::string> inputs;
    std::string out;
    PrepareOptions opt;
    bool force = false;
    std::vector<std::uint64_t> split_bytes;
};
// The data.* keys prepare reads, each with the flag that sets the same thing.
const std::vector<std::pair<std::string, std::string>> kDataKeys = {
    {"data.tokenizer", "--tokenizer"},
    {"data.val_fraction", "--val-fraction"},
    {"data.test_fraction", "--test-fraction"},
    {"data.split_seed", "--seed"},
    {"data.format", "--format"},
    {"data.field", "--field"},
    {"data.separator", "--separator"},
    {"data.skip_bad_lines", "--skip-bad-lines"}};

// --config.data.* overrides as the flags they stand for; a setting given both ways is refused.
void apply_data_overrides(PrepareArgs& a, const CLI::App& cmd,
                          const std::vector<std::string>& overrides) {
    std::vector<std::string> keys;
    for (const auto& [key, flag] : kDataKeys) keys.push_back(key);
    require_used_overrides(overrides, "meshlm prepare", keys);
    if (overrides.empty()) return;
    const DataConfig d = load_config("", overrides).data;
    for (const auto& [key, flag] : kDataKeys) {
        if (!overridden(overrides, key)) continue;
        if (cmd.count(flag) > 0)
            MESHLM_INVALID("meshlm prepare: ", flag, " and --config.", key,
                           " set the same thing; give one of them");
        PrepareOptions& o = a.opt;
        if (key == "data.tokenizer") o.tokenizer_spec = d.tokenizer;
        if (key == "data.val_fraction") o.val_fraction = d.val_fraction;
        if (key == "data.test_fraction") o.test_fraction = d.test_fraction;
        if (key == "data.split_seed") o.seed = static_cast<std::uint64_t>(d.split_seed);
        if (key == "data.format") o.read.format = parse_corpus_format(d.format);
        if (key == "data.field") o.read.field = d.field;
        if (key == "data.separator") o.read.separator = d.separator;
        if (key == "data.skip_bad_lines") o.read.skip_bad_lines = d.skip_bad_lines;
    }
}
}  // namespace

CommandRunner add_prepare_command(CLI::App& app, const std::vector<std::string>& overrides) {
    auto* cmd = app.add_subcommand(
        "prepare", "Tokenize raw corpora into train/val/test token shards and a meta.json");
    auto a = std::make_shared<PrepareArgs>();
    cmd->add_option("--input", a->inputs,
                    "files, directories (recursive) or globs of text / JSONL, optionally .gz or "
                    ".zst (repeatable)")
        ->required();
    cmd->add_option("--tokenizer", a->opt.tokenizer_spec, "tokenizer spec (as data.tokenizer)")
        ->capture_default_str();
    cmd->add_option("--out", a->out, "output directory")->required();
    add_corpus_read_flags(cmd, a->opt.read);
    cmd->add_option("--val-fraction", a->opt.val_fraction, "share of documents for validation")
        ->capture_default_str()
        ->check(in_range(0, 1));
    cmd->add_option("--test-fraction", a->opt.test_fraction, "share of documents for test")
        ->capture_default_str()
        ->check(in_range(0, 1));
    cmd->add_option("--seed", a->opt.seed, "seed of the document split")->capture_default_str();
    cmd->add_option("--shard-tokens", a->opt.shard_tokens, "most tokens per shard")
        ->capture_default_str()
        ->check(positive());
    cmd->add_option("--threads", a->opt.threads, "tokenizer threads (0 = all cores)")
        ->capture_default_str()
        ->check(at_least(0));
    cmd->add_flag("--force", a->force, "replace what --out holds (its meta.json and shards)");
    cmd->add_option("--split-bytes", a->split_bytes,
                    "TRAIN,VAL,TEST: split one file by position instead of by document (byte "
                    "tokenizer; enwik8: 90000000,5000000,5000000)")
        ->delimiter(',')
        ->expected(3);
    return [a, cmd, &overrides] {
        apply_data_overrides(*a, *cmd, overrides);
        // meta.json records the tokenizer by absolute path: it supplies data.tokenizer to runs
        // started from any directory.
        if (a->opt.tokenizer_spec != "byte")
            a->opt.tokenizer_spec =
                std::filesystem::absolute(a->opt.tokenizer_spec).lexically_normal().string();
        std::error_code ec;
        if (!a->force && std::filesystem::is_directory(a->out, ec) &&
            !std::filesystem::is_empty(a->out, ec))
            MESHLM_INVALID("--out ", a->out,
                           " is not empty; give --force to replace what it holds, or choose "
                           "another --out");
        auto tok = make_tokenizer(a->opt.tokenizer_spec);
        PreparedMeta m;
        if (!a->split_bytes.empty()) {
            if (a->inputs.size() != 1)
                MESHLM_INVALID("--split-bytes splits one file; got ", a->inputs.size(),
                               " --input values");
            const std::uint64_t bytes[3] = {a->split_bytes[0], a->split_bytes[1],
                                            a->split_bytes[2]};
            m = prepare_byte_splits(a->inputs[0], bytes, *tok, a->out);
        } else {
            m = prepare_corpus(a->inputs, a->opt, *tok, a->out);
        }
        for (const char* s : {"train", "val", "test"}) {
            const auto& sp = m.splits[s];
            std::cout << s << ": " << sp.documents << " documents, " << sp.tokens << " tokens, "
                      << sp.shards.size() << " shards\n";
        }
        std::cout << "wrote " << a->out << "/meta.json\n";
        return 0;
    };
}

}  // namespace meshlm
