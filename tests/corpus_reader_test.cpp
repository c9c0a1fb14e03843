// Corpus reading: inputs (files, directories, globs), formats, compression, errors.
#include <gtest/gtest.h>
#include <zlib.h>
#include <zstd.h>

#include <filesystem>
#include <fstream>

#include "meshlm/core/error.h"
#include "meshlm/data/corpus_reader.h"
#include "test_util.h"

namespace fs = std::filesystem;
using namespace meshlm;

namespace {

void write_gz(const std::string& path, const std::string& data) {
    gzFile f = gzopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(gzwrite(f, data.data(), static_cast<unsigned>(data.size())),
              static_cast<int>(data.size()));
    gzclose(f);
}

std::string zstd_bytes(const std::string& data) {
    std::string out(ZSTD_compressBound(data.size()), '\0');
    std::size_t n = ZSTD_compress(out.data(), out.size(), data.data(), data.size(), 3);
    EXPECT_FALSE(ZSTD_isError(n));
    out.resize(n);
    return out;
}

std::vector<std::string> read_all(const std::vector<std::string>& inputs, CorpusReadOptions opt,
                                  CorpusStats* stats = nullptr) {
    CorpusReader r(inputs, opt);
    std::vector<std::string> docs;
    for (std::string d; r.next(d);) docs.push_back(d);
    if (stats) *stats = r.stats();
    return docs;
}

std::string error_of(const std::vector<std::string>& inputs, CorpusReadOptions opt) {
    try {
        read_all(inputs, opt);
    } catch (const InvalidInput& e) {
        return e.what();
    }
    return "";
}

const std::string kJsonl =
    "{\"text\": \"first doc\"}\n{\"text\": \"second\\ndoc\", \"id\": 2}\n\n"
    "{\"body\": \"x\", \"text\": \"third\"}\n";

}  // namespace

TEST(CorpusReader, JsonlOneDocumentPerRecord) {
    auto dir = test::temp_dir("cr_jsonl");
    test::write_file(dir + "/a.jsonl", kJsonl);
    auto docs = read_all({dir + "/a.jsonl"}, {});
    EXPECT_EQ(docs, (std::vector<std::string>{"first doc", "second\ndoc", "third"}));
    CorpusReadOptions opt;
    opt.field = "body";
    opt.skip_bad_lines = true;
    CorpusStats st;
    EXPECT_EQ(read_all({dir + "/a.jsonl"}, opt, &st), std::vector<std::string>{"x"});
    EXPECT_EQ(st.bad_lines, 2u);
}

TEST(CorpusReader, TextPerFileOrSeparator) {
    auto dir = test::temp_dir("cr_text");
    test::write_file(dir + "/b.txt", "one\n%\ntwo\nlines\r\n%\r\n \n%\nthree");
    test::write_file(dir + "/a.txt", "alpha\n");
    EXPECT_EQ(read_all({dir}, {}),
              (std::vector<std::string>{"alpha\n", "one\n%\ntwo\nlines\r\n%\r\n \n%\nthree"}));
    CorpusReadOptions opt;
    opt.separator = "%";
    EXPECT_EQ(read_all({dir}, opt),
              (std::vector<std::string>{"alpha\n", "one\n", "two\nlines\r\n", "three"}));
}

TEST(CorpusReader, GzipAndZstdMatchPlain) {
    auto dir = test::temp_dir("cr_compressed");
    test::write_file(dir + "/plain.jsonl", kJsonl);
    write_gz(dir + "/c.jsonl.gz", kJsonl);
    test::write_file(dir + "/c.jsonl.zst", zstd_bytes(kJsonl));
    // Two concatenated zstd frames are one stream.
    test::write_file(dir + "/two.jsonl.zst",
                     zstd_bytes("{\"text\": \"a\"}\n") + zstd_bytes("{\"text\": \"b\"}\n"));
    auto plain = read_all({dir + "/plain.jsonl"}, {});
    EXPECT_EQ(read_all({dir + "/c.jsonl.gz"}, {}), plain);
    EXPECT_EQ(read_all({dir + "/c.jsonl.zst"}, {}), plain);
    EXPECT_EQ(read_all({dir + "/two.jsonl.zst"}, {}), (std::vector<std::string>{"a", "b"}));
    write_gz(dir + "/t.txt.gz", "gz text");
    EXPECT_EQ(read_all({dir + "/t.txt.gz"}, {}), std::vector<std::string>{"gz text"});
    EXPECT_EQ(read_file_decompressed(dir + "/c.jsonl.zst"), kJsonl);
}

TEST(CorpusReader, TruncatedCompressedFilesAreErrors) {
    auto dir = test::temp_dir("cr_trunc");
    std::string big;
    for (int i = 0; i < 2000; ++i) big += "{\"text\": \"document " + std::to_string(i) + "\"}\n";
    std::string z = zstd_bytes(big);
    test::write_file(dir + "/t.jsonl.zst", z.substr(0, z.size() / 2));
    EXPECT_NE(error_of({dir + "/t.jsonl.zst"}, {}).find("zstd"), std::string::npos);
    write_gz(dir + "/full.jsonl.gz", big);
    std::string gz = read_file_decompressed(dir + "/full.jsonl.gz");
    EXPECT_EQ(gz, big);
    std::ifstream in(dir + "/full.jsonl.gz", std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), {});
    test::write_file(dir + "/t.jsonl.gz", bytes.substr(0, bytes.size() / 2));
    EXPECT_NE(error_of({dir + "/t.jsonl.gz"}, {}).find("gzip"), std::string::npos);
}

TEST(CorpusReader, MalformedJsonlNamesFileAndLine) {
    auto dir = test::temp_dir("cr_bad");
    test::write_file(dir + "/bad.jsonl",
                     "{\"text\": \"ok\"}\n{\"text\": \"ok2\"}\n{\"text\": oops}\n[1]\n"
                     "{\"text\": 5}\n{\"text\": \"last\"}\n");
    std::string e = error_of({dir + "/bad.jsonl"}, {});
    EXPECT_NE(e.find(dir + "/bad.jsonl:3: malformed JSON"), std::string::npos) << e;
    CorpusReadOptions opt;
    opt.skip_bad_lines = true;
    CorpusStats st;
    EXPECT_EQ(read_all({dir + "/bad.jsonl"}, opt, &st),
              (std::vector<std::string>{"ok", "ok2", "last"}));
    EXPECT_EQ(st.bad_lines, 3u);
    EXPECT_EQ(st.documents, 3u);
}

TEST(CorpusReader, DirectoriesGlobsAndDuplicates) {
    auto dir = test::temp_dir("cr_glob");
    test::write_file(dir + "/z/2.jsonl", "{\"text\": \"z2\"}\n");
    test::write_file(dir + "/a/1.jsonl", "{\"text\": \"a1\"}\n");
    test::write_file(dir + "/a/sub/0.jsonl", "{\"text\": \"a0\"}\n");
    test::write_file(dir + "/bin.txt", std::string("x\0y", 3));
    EXPECT_EQ(read_all({dir}, {}), (std::vector<std::string>{"a1", "a0", "z2"}));
    EXPECT_EQ(read_all({dir + "/*/*.jsonl", dir + "/a/1.jsonl"}, {}),
              (std::vector<std::string>{"a1", "z2"}));
    CorpusStats st;
    read_all({dir}, {}, &st);
    EXPECT_EQ(st.skipped_files, 1u);
}

TEST(CorpusReader, MissingAndEmptyInputsAreClearErrors) {
    auto dir = test::temp_dir("cr_missing");
    EXPECT_NE(error_of({dir + "/nope.jsonl"}, {}).find("does not exist"), std::string::npos);
    EXPECT_NE(error_of({dir + "/*.nope"}, {}).find("matches no files"), std::string::npos);
    test::write_file(dir + "/empty.txt", " \n\n");
    EXPECT_NE(error_of({dir + "/empty.txt"}, {}).find("holds no documents"), std::string::npos);
    EXPECT_THROW(parse_corpus_format("csv"), InvalidInput);
}

TEST(CorpusReader, FortunesLayoutSkipsBinaryIndexFiles) {
    auto dir = test::temp_dir("cr_fortunes");
    test::write_file(dir + "/f", "a fortune\n%\nanother\n%\n");
    test::write_file(dir + "/f.dat", std::string("\0\0\1", 3));
    CorpusReadOptions opt;
    opt.format = CorpusFormat::Text;
    opt.separator = "%";
    EXPECT_EQ(read_all({dir}, opt), (std::vector<std::string>{"a fortune\n", "another\n"}));
}
