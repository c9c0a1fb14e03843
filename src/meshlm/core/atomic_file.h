// A file that appears at its final path complete or not at all: written to "<path>.tmp.<pid>",
// flushed to disk, then renamed. Destroyed without commit(), it removes the temporary.
// MESHLM_FAULT_WRITE (write_fault.h) makes a chosen write fail, for tests.
#pragma once

#include <cstdio>
#include <optional>
#include <string>

#include "meshlm/core/write_fault.h"

namespace meshlm {

class AtomicFile {
  public:
    explicit AtomicFile(std::string path);
    ~AtomicFile();
    AtomicFile(const AtomicFile&) = delete;
    AtomicFile& operator=(const AtomicFile&) = delete;

    void write(const void* data, std::size_t bytes);
    void write(const std::string& s) { write(s.data(), s.size()); }
    void commit();  // fsync + rename; throws on failure

  private:
    std::string path_, tmp_;
    std::FILE* f_ = nullptr;
    std::optional<WriteFault> fault_;  // the test hook's failure for this file, if any
    std::size_t written_ = 0;
};

// Writes a whole text file atomically.
void write_file_atomic(const std::string& path, const std::string& contents);

}  // namespace meshlm
