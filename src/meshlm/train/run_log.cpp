#include "meshlm/train/run_log.h"

#include <cerrno>
#include <cstring>
#include <iostream>

#include "meshlm/core/error.h"

namespace meshlm {

LogText::~LogText() {
    if (!line_.empty()) emit(line_ + "\n");  // an unfinished last line
    if (f_) std::fclose(f_);
}

void LogText::put(char c) {
    if (escape_ == 1) {
        escape_ = c == '[' ? 2 : 0;
        return;
    }
    if (escape_ == 2) {
        if (c >= 0x40 && c <= 0x7E) escape_ = 0;
        return;
    }
    if (c == '\033') {
        escape_ = 1;
    } else if (c == '\r') {
        line_.clear();
    } else {
        line_ += c;
        if (c == '\n') emit(line_), line_.clear();
    }
}

void LogText::emit(const std::string& line) {
    if (!f_) {
        held_ += line;
        return;
    }
    std::fwrite(line.data(), 1, line.size(), f_);
    std::fflush(f_);  // a killed run's log keeps every line it printed
}

void LogText::open(const std::string& path, bool append) {
    std::FILE* f = std::fopen(path.c_str(), append ? "a" : "w");
    if (!f) MESHLM_INVALID("cannot write ", path, ": ", std::strerror(errno));
    f_ = f;
    emit(held_);
    held_.clear();
    flush();
}

void LogText::flush() {
    if (f_) std::fflush(f_);
}

RunLog::RunLog() : out_(std::cout.rdbuf(), text_), err_(std::cerr.rdbuf(), text_) {
    std::cout.flush();
    std::cout.rdbuf(&out_);
    std::cerr.rdbuf(&err_);
}

RunLog::~RunLog() {
    std::cout.flush();
    std::cout.rdbuf(out_.console());
    std::cerr.rdbuf(err_.console());
}

void RunLog::note(const std::string& line) {
    for (const char c : line + "\n") text_.put(c);
    text_.flush();
}

int RunLog::Tee::overflow(int c) {
    if (c == traits_type::eof()) return traits_type::not_eof(c);
    log_.put(static_cast<char>(c));
    return console_->sputc(static_cast<char>(c));
}

std::streamsize RunLog::Tee::xsputn(const char* s, std::streamsize n) {
    for (std::streamsize i = 0; i < n; ++i) log_.put(s[i]);
    return console_->sputn(s, n);
}

int RunLog::Tee::sync() {
    log_.flush();
    return console_->pubsync();
}

}  // namespace meshlm
