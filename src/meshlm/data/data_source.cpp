#include "meshlm/data/data_source.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <ostream>

#include "meshlm/core/error.h"
#include "meshlm/core/hash.h"
#include "meshlm/data/corpus_reader.h"
#include "meshlm/data/prepare.h"

namespace fs = std::filesystem;

namespace meshlm {

std::string data_cache_root(const DataConfig& cfg) {
    if (!cfg.cache_dir.empty()) return cfg.cache_dir;
    if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/meshlm";
    if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/meshlm";
    return ".meshlm-cache";
}

namespace {

PrepareOptions prepare_options(const DataConfig& cfg) {
    PrepareOptions opt;
    opt.read.format = parse_corpus_format(cfg.format);
    opt.read.field = cfg.field;
    opt.read.separator = cfg.separator;
    opt.read.skip_bad_lines = cfg.skip_bad_lines;
    opt.tokenizer_spec = cfg.tokenizer;
    opt.val_fraction = cfg.val_fraction;
    opt.test_fraction = cfg.test_fraction;
    opt.seed = static_cast<std::uint64_t>(cfg.split_seed);
    return opt;
}

// Everything that decides the prepared tokens.
std::string cache_key(const DataConfig& cfg, const Tokenizer& tok,
                      const std::vector<std::string>& files) {
    Fnv1a h;
    h.add(std::string("meshlm-prepared-v1"));
    for (const auto& f : files) {
        std::error_code ec;
        h.add(fs::absolute(f).string());
        std::uint64_t size = fs::file_size(f, ec);
        auto mtime =
            static_cast<std::int64_t>(fs::last_write_time(f, ec).time_since_epoch().count());
        h.add(&size, sizeof size);
        h.add(&mtime, sizeof mtime);
    }
    // The tokenizer by content: the same file under another path prepares the same tokens.
    for (const std::string& s :
         {cfg.format, cfg.field, cfg.separator, tokenizer_fingerprint(tok, cfg.tokenizer)})
        h.add(s);
    double nums[3] = {cfg.val_fraction, cfg.test_fraction, static_cast<double>(cfg.split_seed)};
    h.add(nums, sizeof nums);
    h.add(&cfg.skip_bad_lines, sizeof cfg.skip_bad_lines);
    return h.hex();
}

}  // namespace

std::string resolve_prepared_data(const DataConfig& cfg, const Tokenizer& tok, std::ostream& log) {
    if (is_prepared_dir(cfg.path)) {
        check_prepared_tokenizer(cfg.path, tok, cfg.tokenizer);
        return cfg.path;
    }
    std::error_code ec;
    if (cfg.path == DataConfig{}.path && !fs::exists(cfg.path, ec))
        MESHLM_INVALID("data.path ", cfg.path,
                       " does not exist: the default corpus is Debian's "
                       "fortunes (apt-get install fortunes, or run scripts/setup.sh)");
    std::vector<std::string> files = expand_inputs({cfg.path});
    const std::string dir = data_cache_root(cfg) + "/prepared/" + cache_key(cfg, tok, files);
    if (is_prepared_dir(dir)) {
        log << "data: using the prepared cache " << dir << "\n";
        return dir;
    }
    log << "data: preparing " << cfg.path << " into " << dir << "\n";
    log.flush();
    const std::string tmp = dir + ".tmp." + std::to_string(::getpid());
    fs::remove_all(tmp, ec);
    fs::create_directories(tmp);
    try {
        prepare_corpus({cfg.path}, prepare_options(cfg), tok, tmp);
    } catch (...) {
        fs::remove_all(tmp, ec);
        throw;
    }
    fs::rename(tmp, dir, ec);
    if (ec) {  // another process finished the same cache first: use theirs
        fs::remove_all(tmp, ec);
        if (!is_prepared_dir(dir))
            MESHLM_INVALID("could not move the prepared data into ", dir, ": ", ec.message());
    }
    return dir;
}

}  // namespace meshlm
