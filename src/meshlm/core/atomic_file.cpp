#include "meshlm/core/atomic_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "meshlm/core/error.h"

namespace meshlm {

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
    tmp_ = path_ + ".tmp." + std::to_string(::getpid());
    fault_ = write_fault_for(path_);
    f_ = std::fopen(tmp_.c_str(), "wb");
    if (!f_) MESHLM_INVALID("cannot write ", tmp_, ": ", std::strerror(errno));
}

AtomicFile::~AtomicFile() {
    if (f_) {
        std::fclose(f_);
        std::remove(tmp_.c_str());
    }
}

void AtomicFile::write(const void* data, std::size_t bytes) {
    if (fault_ && written_ + bytes > fault_->at) {
        // What a disk that fills up midway leaves: the bytes before the failure, then an error.
        const std::size_t part = fault_->at > written_ ? fault_->at - written_ : 0;
        if (part) std::fwrite(data, 1, part, f_);
        throw Error(detail::concat("write to ", tmp_, " failed: ", std::strerror(fault_->error),
                                   " (injected by MESHLM_FAULT_WRITE)"));
    }
    if (bytes && std::fwrite(data, 1, bytes, f_) != bytes)
        throw Error(detail::concat("write to ", tmp_, " failed: ", std::strerror(errno)));
    written_ += bytes;
}

void AtomicFile::commit() {
    bool ok = std::fflush(f_) == 0 && ::fsync(::fileno(f_)) == 0;
    ok = (std::fclose(f_) == 0) && ok;
    f_ = nullptr;
    if (!ok || std::rename(tmp_.c_str(), path_.c_str()) != 0) {
        std::remove(tmp_.c_str());
        throw Error(detail::concat("could not complete ", path_, ": ", std::strerror(errno)));
    }
}

void write_file_atomic(const std::string& path, const std::string& contents) {
    AtomicFile f(path);
    f.write(contents);
    f.commit();
}

}  // namespace meshlm
