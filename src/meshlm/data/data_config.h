// Where training text comes from and how it is split.
#pragma once

#include <string>

namespace meshlm {

struct DataConfig {
    // Plain-text files or a directory of them; documents are separated by lines equal to
    // `separator`. The default is Debian's fortunes corpus.
    std::string path = "/usr/share/games/fortunes";
    std::string separator = "%";
    std::string tokenizer = "byte";
    float val_fraction = 0.1f;  // share of documents held out for validation
    int split_seed = 1234;      // seeds the document shuffle of the split
    bool synthetic = false;     // uniformly random tokens instead of text (benchmarks)
};

}  // namespace meshlm
