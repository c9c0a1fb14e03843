// tokenizer_probe.h: load a tokenizer file and use it as training and serving would.
#include "tokenizer_probe.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "meshlm/data/tokenizer.h"

namespace meshlm::fuzz {

void probe_tokenizer(const std::string& path) {
    const auto tok = make_tokenizer(path);
    static const char probe[] =
        "Hello, world! It's 2024: \xc3\xa9t\xc3\xa9 \xe4\xb8\xad\xe6\x96\x87 <|endoftext|>\n\t  "
        "x  y\r\n\xff\xfe invalid \xc3 utf-8";
    const std::vector<std::int32_t> ids = tok->encode(probe);
    (void)tok->decode(ids);
    const int V = tok->vocab_size();
    std::vector<std::int32_t> ends;
    for (int i = 0; i < std::min(V, 8); ++i) ends.push_back(i);
    for (int i = std::max(0, V - 8); i < V; ++i) ends.push_back(i);
    ends.push_back(tok->eot_id());
    (void)tok->decode(ends);
    (void)tok->name();
}

}  // namespace meshlm::fuzz
