// meshlm train-tokenizer --input PATH... --type {bpe,spm-bpe,spm-unigram} --vocab-size N
//                        --out PATH [reader flags] [--special TOK...] [--threads N]
// bpe: native byte-level BPE (data/bpe_trainer.h); --out is the tokenizer.json to write.
// spm-*: libsentencepiece (data/spm_tokenizer.h); --out is a model prefix P (writes P.model and
// P.vocab) or a path ending in .model (the prefix is that path without ".model").
// Every file is written to a temporary name and renamed when complete (io/atomic_file.h).
#include <unistd.h>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "meshlm/cli/commands.h"
#include "meshlm/cli/corpus_flags.h"
#include "meshlm/cli/overrides.h"
#include "meshlm/cli/validators.h"
#include "meshlm/core/atomic_file.h"
#include "meshlm/core/error.h"
#include "meshlm/data/bpe_trainer.h"
#include "meshlm/data/corpus_reader.h"
#include "meshlm/data/spm_tokenizer.h"

namespace meshlm {

namespace {

struct TrainTokenizerArgs {
    std::vector<std::string> inputs, specials;
    bool specials_given = false;
    std::string type = "bpe", out;
    int vocab_size = 0, threads = 0;
    double character_coverage = 1.0;
    bool byte_fallback = false;
    std::uint64_t min_frequency = 0;
    CorpusReadOptions read;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void ensure_parent_dir(const std::string& path) {
    const auto parent = std::filesystem::path(path).parent_path();
    if (!parent.empty()) std::filesystem::create_directories(parent);
}

int run_bpe(const TrainTokenizerArgs& a) {
    BpeTrainOptions opt;
    opt.vocab_size = a.vocab_size;
    if (a.specials_given) opt.special_tokens = a.specials;
    opt.min_frequency = a.min_frequency;
    opt.threads = a.threads;
    BpeTrainer trainer(opt);  // validates vocab size and specials before reading anything

    const auto t0 = std::chrono::steady_clock::now();
    CorpusReader reader(a.inputs, a.read);
    std::vector<std::string> batch;
    std::size_t batch_bytes = 0;
    std::string doc;
    const auto flush = [&] {
        trainer.add_documents(batch);
        batch.clear();
        batch_bytes = 0;
        std::cerr << "train-tokenizer: counted " << reader.stats().documents << " documents, "
                  << reader.stats().bytes / 1e6 << " MB, " << trainer.distinct_words()
                  << " distinct words (" << seconds_since(t0) << " s)\n";
    };
    while (reader.next(doc)) {
        batch_bytes += doc.size();
        batch.push_back(std::move(doc));
        if (batch_bytes >= (64u << 20)) flush();
    }
    flush();
    const double t_count = seconds_since(t0);
    const auto t1 = std::chrono::steady_clock::now();
    BpeModel model = trainer.train([&](std::size_t done, std::size_t wanted) {
        std::cerr << "train-tokenizer: " << done << " / " << wanted << " merges ("
                  << seconds_since(t1) << " s)\n";
    });
    const double t_merge = seconds_since(t1);
    ensure_parent_dir(a.out);
    write_file_atomic(a.out, bpe_model_to_hf_json(model));
    std::cout << "wrote " << a.out << ": " << model.tokens.size() << " tokens, "
              << model.merges.size() << " merges (counting " << t_count << " s, merging " << t_merge
              << " s)\n";
    if (static_cast<int>(model.tokens.size()) < a.vocab_size)
        std::cout << "note: the corpus allowed only " << model.tokens.size() << " of the "
                  << a.vocab_size << " tokens asked for\n";
    return 0;
}

int run_spm(const TrainTokenizerArgs& a) {
    SpmTrainOptions opt;
    opt.model_type = a.type == "spm-bpe" ? "bpe" : "unigram";
    opt.vocab_size = a.vocab_size;
    opt.character_coverage = a.character_coverage;
    opt.byte_fallback = a.byte_fallback;
    opt.user_defined_symbols = a.specials;  // eos (</s>, id 2) is always there
    opt.threads = a.threads;
    std::string prefix = a.out;
    if (prefix.size() > 6 && prefix.compare(prefix.size() - 6, 6, ".model") == 0)
        prefix.resize(prefix.size() - 6);

    const auto t0 = std::chrono::steady_clock::now();
    CorpusReader reader(a.inputs, a.read);
    std::cerr << "train-tokenizer: reading " << reader.files().size()
              << " files into SentencePiece (its own progress log follows)\n";
    const std::string model = train_spm([&](std::string& doc) { return reader.next(doc); }, opt);
    auto tok = SpmTokenizer::from_serialized(model, prefix + ".model");
    ensure_parent_dir(prefix);
    write_file_atomic(prefix + ".model", model);
    write_file_atomic(prefix + ".vocab", tok->vocab_text());
    std::cout << "wrote " << prefix << ".model and " << prefix << ".vocab: " << tok->vocab_size()
              << " pieces, eos id " << tok->eot_id() << " (" << reader.stats().documents
              << " documents, " << seconds_since(t0) << " s)\n";
    return 0;
}

}  // namespace

CommandRunner add_train_tokenizer_command(CLI::App& app,
                                          const std::vector<std::string>& overrides) {
    auto* cmd = app.add_subcommand(
        "train-tokenizer",
        "Train a byte-level BPE (tokenizer.json) or a SentencePiece model (.model) on corpora");
    auto a = std::make_shared<TrainTokenizerArgs>();
    cmd->add_option("--input", a->inputs,
                    "files, directories (recursive) or globs of text / JSONL, optionally .gz or "
                    ".zst (repeatable)")
        ->required();
    cmd->add_option("--type", a->type,
                    "bpe: native byte-level BPE -> HF tokenizer.json; spm-bpe / spm-unigram: "
                    "SentencePiece -> .model + .vocab")
        ->capture_default_str()
        ->check(CLI::IsMember({"bpe", "spm-bpe", "spm-unigram"}));
    cmd->add_option("--vocab-size", a->vocab_size,
                    "vocabulary size, special tokens included (bpe: at least 256 + specials)")
        ->required()
        ->check(positive());
    cmd->add_option("--out", a->out,
                    "bpe: the tokenizer.json to write; spm-*: a model prefix P (P.model, P.vocab) "
                    "or a path ending in .model")
        ->required();
    cmd->add_option("--special", a->specials,
                    "special tokens (repeatable; bpe default <|endoftext|>, the end-of-text "
                    "token; spm-*: extra user-defined symbols, eos is </s>)");
    add_corpus_read_flags(cmd, a->read);
    cmd->add_option("--min-frequency", a->min_frequency,
                    "bpe: a pair must occur at least this often to be merged")
        ->capture_default_str();
    cmd->add_option("--character-coverage", a->character_coverage,
                    "spm-*: share of characters covered by the vocabulary")
        ->capture_default_str()
        ->check(in_range(0.5, 1));
    cmd->add_flag("--byte-fallback", a->byte_fallback,
                  "spm-*: unknown characters become UTF-8 byte pieces instead of <unk>");
    cmd->add_option("--threads", a->threads, "threads (0 = all cores)")
        ->capture_default_str()
        ->check(at_least(0));
    return [a, cmd, &overrides] {
        require_used_overrides(overrides, "meshlm train-tokenizer", {});
        a->specials_given = cmd->count("--special") > 0;
        if (a->out.empty()) MESHLM_INVALID("--out must not be empty");
        if (a->type == "bpe") return run_bpe(*a);
        return run_spm(*a);
    };
}

}  // namespace meshlm
