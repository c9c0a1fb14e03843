// Tokenizer encode throughput, one thread: a meshlm tokenizer (a .tiktoken rank file or a
// tokenizer.json through the HF pipeline) on a corpus of documents.
//   tokenizer_bench SPEC CORPUS [--sep LINE] [--repeat N]
// Documents are separated by lines equal to --sep (default "%", the fortunes format). Prints
// MB/s and tokens; bench/tokenizer_bench.sh runs it next to HF tokenizers and tiktoken.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "meshlm/data/bpe_tokenizer.h"
#include "meshlm/data/hf/hf_tokenizer.h"
#include "meshlm/data/tokenizer.h"

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: %s SPEC CORPUS [--sep LINE] [--repeat N]\n", argv[0]);
        return 2;
    }
    std::string sep = "%";
    int repeat = 3;
    for (int i = 3; i + 1 < argc; i += 2) {
        if (std::string(argv[i]) == "--sep") sep = argv[i + 1];
        if (std::string(argv[i]) == "--repeat") repeat = std::atoi(argv[i + 1]);
    }
    try {
        auto tok = meshlm::make_tokenizer(argv[1]);
        std::ifstream f(argv[2], std::ios::binary);
        std::vector<std::string> docs(1);
        std::string line;
        std::size_t bytes = 0;
        while (std::getline(f, line)) {
            if (line == sep) {
                docs.emplace_back();
                continue;
            }
            docs.back() += line;
            docs.back() += '\n';
            bytes += line.size() + 1;
        }
        auto* bpe = dynamic_cast<meshlm::BpeTokenizer*>(tok.get());
        auto* hf = dynamic_cast<meshlm::HfTokenizer*>(tok.get());
        std::vector<std::int32_t> ids;
        double best = 1e30;
        std::size_t n_tokens = 0;
        for (int r = 0; r < repeat; ++r) {
            n_tokens = 0;
            const auto t0 = std::chrono::steady_clock::now();
            for (const auto& d : docs) {
                ids.clear();
                if (bpe)
                    bpe->encode_ordinary_into(d, ids);
                else if (hf)
                    hf->encode_into(d, ids);
                else
                    ids = tok->encode(d);
                n_tokens += ids.size();
            }
            const double s =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            best = std::min(best, s);
        }
        std::printf("meshlm %s: %zu docs, %.2f MB, %zu tokens, best of %d: %.3f s, %.2f MB/s\n",
                    tok->name().c_str(), docs.size(), bytes / 1e6, n_tokens, repeat, best,
                    bytes / 1e6 / best);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
    return 0;
}
