// One HTTP connection's socket as a cpp-httplib Stream: buffered reads that fail once the
// request's deadline has passed (the head and body of a request must arrive within it, however
// the client spaces its bytes: slowloris), and writes that fail when the client takes no bytes
// for the write timeout or has gone (the sequence behind a stream is then cancelled).
#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <vector>

namespace meshlm {

class DeadlineStream : public httplib::Stream {
  public:
    using Clock = std::chrono::steady_clock;
    // `stopping`: when it turns true, waiting reads give up (the server is closing).
    DeadlineStream(int fd, std::chrono::milliseconds write_timeout,
                   const std::atomic<bool>* stopping);

    void set_read_deadline(Clock::time_point t) { deadline_ = t; }
    // A read failed (deadline passed, server stopping, client closed or reset): what is left of
    // the request is unknown and the connection must close.
    bool read_failed() const { return read_failed_; }
    // Bytes already read from the socket and not yet consumed (a pipelined request).
    bool has_buffered() const { return begin_ < end_; }

    bool is_readable() const override;
    bool is_writable() const override;
    ssize_t read(char* ptr, size_t size) override;
    ssize_t write(const char* ptr, size_t size) override;
    void get_remote_ip_and_port(std::string& ip, int& port) const override;
    void get_local_ip_and_port(std::string& ip, int& port) const override;
    socket_t socket() const override { return fd_; }

  private:
    bool wait_readable() const;  // until the deadline

    int fd_;
    Clock::time_point deadline_;
    std::chrono::milliseconds write_timeout_;
    const std::atomic<bool>* stopping_;
    std::vector<char> buf_;
    std::size_t begin_ = 0, end_ = 0;
    bool read_failed_ = false;
};

}  // namespace meshlm
