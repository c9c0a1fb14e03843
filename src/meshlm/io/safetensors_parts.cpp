#include "meshlm/io/safetensors_parts.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "meshlm/core/error.h"
#include "meshlm/core/file_sync.h"

namespace fs = std::filesystem;

namespace meshlm {
namespace {

int open_parts(const std::string& path, int flags) {
    const int fd = ::open(path.c_str(), flags, 0644);
    if (fd < 0) throw Error(detail::concat("cannot open ", path, ": ", std::strerror(errno)));
    return fd;
}

void write_at(int fd, const void* data, std::size_t bytes, std::size_t at,
              const std::string& path) {
    const char* p = static_cast<const char*>(data);
    while (bytes > 0) {
        const ssize_t n = ::pwrite(fd, p, bytes, static_cast<off_t>(at));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0)
            throw Error(detail::concat("writing ", path, " failed: ", std::strerror(errno)));
        p += n, at += static_cast<std::size_t>(n), bytes -= static_cast<std::size_t>(n);
    }
}

}  // namespace

std::string safetensors_parts_path(const std::string& path) {
    return path + ".tmp";
}

void create_safetensors_parts(const std::string& path, const SafetensorsPlan& plan) {
    const std::string tmp = safetensors_parts_path(path);
    const int fd = open_parts(tmp, O_WRONLY | O_CREAT | O_TRUNC);
    try {
        write_at(fd, plan.head.data(), plan.head.size(), 0, tmp);
        if (::ftruncate(fd, static_cast<off_t>(plan.size)) != 0)
            throw Error(detail::concat("sizing ", tmp, " failed: ", std::strerror(errno)));
    } catch (...) {
        ::close(fd);
        throw;
    }
    ::close(fd);
}

SafetensorsPartWriter::SafetensorsPartWriter(const std::string& path, const SafetensorsPlan& plan)
    : plan_(plan), tmp_(safetensors_parts_path(path)), fd_(open_parts(tmp_, O_WRONLY)) {}

SafetensorsPartWriter::~SafetensorsPartWriter() {
    ::close(fd_);
}

void SafetensorsPartWriter::write_f32(std::size_t tensor, std::size_t at, const float* data,
                                      std::size_t n) {
    write_at(fd_, data, n * sizeof(float), plan_.offsets[tensor] + at * sizeof(float), tmp_);
}

void SafetensorsPartWriter::sync() {
    if (::fsync(fd_) != 0)
        throw Error(detail::concat("syncing ", tmp_, " failed: ", std::strerror(errno)));
}

void publish_safetensors_parts(const std::string& path) {
    fs::rename(safetensors_parts_path(path), path);
    fsync_dir(fs::path(path).parent_path().string());
}

void discard_safetensors_parts(const std::string& path) {
    std::error_code ec;
    fs::remove(safetensors_parts_path(path), ec);
}

}  // namespace meshlm
