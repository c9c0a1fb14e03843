#include "test_util.h"

#include "meshlm/core/buffer.h"
#include "meshlm/core/rng.h"
#include "meshlm/data/corpus_reader.h"
#include "meshlm/model/transformer_layout.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <vector>

namespace meshlm::test {

double scaled_max_error(const float* a, const std::vector<float>& b, double floor) {
    double err = 0, scale = floor;
    for (std::size_t i = 0; i < b.size(); ++i) {
        err = std::max(err, std::fabs(double(a[i]) - b[i]));
        scale = std::max(scale, std::fabs(double(b[i])));
    }
    return err / scale;
}

std::string source_dir() {
    // A test binary carried to another machine (the GPU check) finds the checkout there.
    if (const char* moved = std::getenv("MESHLM_SOURCE_DIR")) return moved;
    return MESHLM_SOURCE_DIR;
}
std::string venv_python() {
    const std::string py = source_dir() + "/.venv/bin/python";
    return access(py.c_str(), X_OK) == 0 ? py : "";
}
std::string meshlm_binary() {
    return MESHLM_BINARY;
}
std::string fixture(const std::string& name) {
    return source_dir() + "/tests/fixtures/" + name;
}

namespace {
struct TempDirs {
    std::vector<std::filesystem::path> dirs;
    ~TempDirs() {
        std::error_code ec;
        for (auto& d : dirs) std::filesystem::remove_all(d, ec);
    }
};
TempDirs g_temp_dirs;
}  // namespace

std::string temp_dir(const std::string& tag) {
    std::random_device rd;
    auto dir = std::filesystem::temp_directory_path() /
               ("meshlm_test_" + tag + "_" + std::to_string(rd()));
    std::filesystem::create_directories(dir);
    g_temp_dirs.dirs.push_back(dir);
    return dir.string();
}

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
}

void write_file(const std::string& path, const std::string& data) {
    auto parent = std::filesystem::path(path).parent_path();
    if (!parent.empty()) std::filesystem::create_directories(parent);
    std::ofstream(path, std::ios::binary) << data;
}

std::vector<std::string> read_documents(const std::string& path, const std::string& separator) {
    CorpusReadOptions opt;
    opt.separator = separator;
    CorpusReader reader({path}, opt);
    std::vector<std::string> docs;
    for (std::string d; reader.next(d);) docs.push_back(std::move(d));
    return docs;
}

BlockSpans block_spans(const ParamLayout& layout, int n_layer) {
    BlockSpans b;
    b.lo.assign(n_layer, layout.total());
    b.hi.assign(n_layer, 0);
    for (const ParamSlice& s : layout.slices()) {
        b.end = std::max(b.end, s.offset + s.numel);
        if (s.layer < 0) continue;
        b.lo[s.layer] = std::min(b.lo[s.layer], s.offset);
        b.hi[s.layer] = std::max(b.hi[s.layer], s.offset + s.numel);
    }
    return b;
}

std::string write_test_corpus(const std::string& dir) {
    std::string text;
    for (int i = 0; i < 300; ++i)
        text += "Document " + std::to_string(i) + ": the quick brown fox jumps over the lazy dog " +
                std::to_string(i % 7) + " times.\n%\n";
    write_file(dir + "/corpus.txt", text);
    return dir + "/corpus.txt";
}

CommandResult run_command(const std::string& cmd) {
    std::string full = cmd + " 2>&1";
    FILE* pipe = popen(full.c_str(), "r");
    if (!pipe) return {-1, "popen failed"};
    std::string out;
    std::array<char, 4096> buf;
    size_t n;
    while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) out.append(buf.data(), n);
    int status = pclose(pipe);
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return {code, out};
}

ModelStep model_step(const ModelConfig& cfg, int B, int T, Recompute r, Precision p,
                     const std::function<void(float* params, std::size_t n)>& edit) {
    Transformer model(cfg, B, T, nullptr, r, p);
    const ParamLayout& layout = model.layout();
    Buffer<float> params(layout.total()), grads(layout.total());
    init_params(cfg, layout, params.data(), 11);
    if (edit) edit(params.data(), layout.total());
    std::memset(grads.data(), 0, layout.total() * sizeof(float));
    std::vector<std::int32_t> tokens(B * T), targets(B * T);
    Philox rng(5, 0);
    for (int i = 0; i < B * T; ++i) {
        tokens[i] = static_cast<std::int32_t>(rng.below(cfg.vocab_size));
        targets[i] = static_cast<std::int32_t>(rng.below(cfg.vocab_size));
    }
    model.set_dropout_key(99, 3, 0);
    ModelStep res;
    res.loss = model.forward(params.data(), tokens.data(), targets.data(), B, T, 1.f / (B * T));
    model.backward(params.data(), grads.data());
    res.grads.assign(grads.data(), grads.data() + layout.total());
    res.activation_bytes = model.activation_bytes();
    return res;
}

ModelConfig tiny_model() {
    ModelConfig m;
    m.n_layer = 2, m.d_model = 32, m.n_head = 2, m.vocab_size = 300, m.max_seq_len = 16;
    return m;
}

}  // namespace meshlm::test
