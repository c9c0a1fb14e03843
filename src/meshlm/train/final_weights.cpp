#include "meshlm/train/final_weights.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <vector>

#include "meshlm/core/error.h"
#include "meshlm/core/file_sync.h"
#include "meshlm/io/safetensors.h"
#include "meshlm/model/transformer.h"
#include "meshlm/model/transformer_layout.h"
#include "meshlm/parallel/tp_shard.h"
#include "meshlm/train/all_ranks.h"

namespace fs = std::filesystem;

namespace meshlm {
namespace {

// An open file descriptor, closed on every path.
struct Fd {
    int fd;
    Fd(const std::string& path, int flags) : fd(::open(path.c_str(), flags, 0644)) {
        if (fd < 0) throw Error(detail::concat("cannot open ", path, ": ", std::strerror(errno)));
    }
    ~Fd() { ::close(fd); }
    void write_at(const void* data, std::size_t bytes, std::size_t at, const std::string& path) {
        const char* p = static_cast<const char*>(data);
        while (bytes > 0) {
            const ssize_t n = ::pwrite(fd, p, bytes, static_cast<off_t>(at));
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0)
                throw Error(detail::concat("writing ", path, " failed: ", std::strerror(errno)));
            p += n, at += static_cast<std::size_t>(n), bytes -= static_cast<std::size_t>(n);
        }
    }
    void sync(const std::string& path) {
        if (::fsync(fd) != 0)
            throw Error(detail::concat("syncing ", path, " failed: ", std::strerror(errno)));
    }
};

}  // namespace

void write_final_weights(const DeviceMesh& mesh, Learner& learner, const ModelConfig& model,
                         const std::string& path,
                         const std::map<std::string, std::string>& metadata) {
    const Learner::LocalChunk c = learner.local_chunk();
    write_final_weights(mesh, learner.layout(), c.params, c.begin, c.count, model, path, metadata);
}

void write_final_weights(const DeviceMesh& mesh, const ParamLayout& local, const float* chunk,
                         std::size_t begin, std::size_t count, const ModelConfig& model,
                         const std::string& path,
                         const std::map<std::string, std::string>& metadata) {
    Comm& world = mesh.world();
    const ParamLayout full = transformer_layout(model);
    std::vector<SafetensorsTensor> tensors;
    for (const ParamSlice& s : full.slices()) tensors.push_back({s.name, DType::f32, s.shape, {}});
    const SafetensorsPlan plan = plan_safetensors(tensors, metadata);
    const std::string tmp = path + ".tmp";
    auto remove_tmp = [&] {
        std::error_code ec;
        if (world.rank() == 0) fs::remove(tmp, ec);
    };
    const std::string what = "writing " + path;

    std::optional<std::string> err;
    if (world.rank() == 0)
        err = capture([&] {
            Fd f(tmp, O_WRONLY | O_CREAT | O_TRUNC);
            f.write_at(plan.head.data(), plan.head.size(), 0, tmp);
            if (::ftruncate(f.fd, static_cast<off_t>(plan.size)) != 0)
                throw Error(detail::concat("sizing ", tmp, " failed: ", std::strerror(errno)));
        });
    throw_if_any_failed(world, err, what, remove_tmp);  // also: the file exists for every rank

    err = capture([&] {
        const int M = mesh.model_size(), m = mesh.model_index();
        Fd f(tmp, O_WRONLY);
        for (std::size_t i = 0; i < full.slices().size(); ++i) {
            const ParamSlice &fs_ = full.slices()[i], &ls = local.slices()[i];
            const bool replicated = M == 1 || fs_.split == TpSplit::replicated;
            if (replicated && m != 0) continue;  // every model rank holds the same values
            auto piece = [&](std::size_t full_at, std::size_t local_at, std::size_t n) {
                // The part of this piece inside the rank's chunk of its local buffer.
                const std::size_t lo = ls.offset + local_at;
                const std::size_t a = std::max(lo, begin), b = std::min(lo + n, begin + count);
                if (a >= b) return;
                f.write_at(chunk + (a - begin), (b - a) * sizeof(float),
                           plan.offsets[i] + (full_at + (a - lo)) * sizeof(float), tmp);
            };
            if (replicated)
                piece(0, 0, fs_.numel);
            else
                tp_for_each_piece(fs_, M, m, piece);
        }
        f.sync(tmp);
    });
    throw_if_any_failed(world, err, what, remove_tmp);

    if (world.rank() == 0)
        err = capture([&] {
            fs::rename(tmp, path);
            fsync_dir(fs::path(path).parent_path().string());
        });
    throw_if_any_failed(world, err, what, remove_tmp);
}

}  // namespace meshlm
