// Raw corpus reading: turns input paths (files, directories, globs) into a stream of documents.
//
// Inputs: a file; a directory (all regular files below it, recursively, in path order); or a
// glob pattern (`data/*.jsonl.zst`). The same file reached twice is read once.
// Compression: gzip and zstd files are recognised by their magic bytes and decompressed while
// streaming (multi-member / multi-frame streams included); anything else is read as is.
// Formats: `jsonl` gives one document per record, the string field `field` ("text"); `text`
// gives one document per file or, with a separator, one per run of lines between separator lines
// (the fortunes corpus uses `%`). `auto` picks jsonl for names ending .jsonl/.json/.ndjson
// (before any .gz/.zst suffix) and text otherwise.
// Errors (meshlm::InvalidInput): a missing input, a glob matching nothing, an unreadable or
// corrupt compressed file, malformed JSONL (reported as file:line unless skip_bad_lines, which
// counts and skips), and inputs holding no documents at all.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace meshlm {

enum class CorpusFormat { Auto, Text, Jsonl };

// Parses "auto" / "text" / "jsonl"; throws InvalidInput otherwise.
CorpusFormat parse_corpus_format(const std::string& s);
const char* corpus_format_name(CorpusFormat f);

struct CorpusReadOptions {
    CorpusFormat format = CorpusFormat::Auto;
    std::string field = "text";   // JSONL: the string field holding a document
    std::string separator;        // text: a line equal to this ends a document; empty: per file
    bool skip_bad_lines = false;  // JSONL: count and skip malformed records instead of throwing
};

struct CorpusStats {
    std::uint64_t files = 0;          // files read
    std::uint64_t skipped_files = 0;  // text files skipped as binary (they hold NUL bytes)
    std::uint64_t documents = 0;      // documents returned
    std::uint64_t bytes = 0;          // bytes of document text returned
    std::uint64_t bad_lines = 0;      // malformed JSONL records skipped
};

// Expands inputs to the sorted, de-duplicated list of files they name (see the header comment).
std::vector<std::string> expand_inputs(const std::vector<std::string>& inputs);

// Splits text into documents ended by lines equal to `separator` (a trailing '\r' on a line is
// ignored); documents holding only whitespace are dropped. Lines keep their '\n'.
void split_text_documents(std::string_view text, const std::string& separator,
                          std::vector<std::string>& docs);

// Reads a whole file, decompressing gzip / zstd. Throws InvalidInput naming the file on error.
std::string read_file_decompressed(const std::string& path);

// Pull-style reader over all documents of all inputs, in input order.
class CorpusReader {
  public:
    CorpusReader(const std::vector<std::string>& inputs, CorpusReadOptions opt);
    ~CorpusReader();
    CorpusReader(const CorpusReader&) = delete;
    CorpusReader& operator=(const CorpusReader&) = delete;

    // Stores the next document in `doc`; false at the end. Throws InvalidInput at the end when
    // no document was found at all.
    bool next(std::string& doc);

    const CorpusStats& stats() const;
    const std::vector<std::string>& files() const;
    std::uint64_t input_bytes_total() const;  // on-disk size of all files
    std::uint64_t input_bytes_done() const;   // on-disk bytes consumed so far

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace meshlm
