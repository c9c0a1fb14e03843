// RUN_DIR/train.log: what the console showed on rank 0 (std::cout and std::cerr, the final
// sample and every note and warning among it), as plain text. A live line redrawn in place keeps
// its last state (a '\r' starts the line over), ANSI escapes are dropped. What is printed
// before the run directory exists is held in memory and written when open() is called; a
// resumed run appends.
#pragma once

#include <cstdio>
#include <ostream>
#include <streambuf>
#include <string>

namespace meshlm {

// The log's text: console bytes in, plain lines out (to a file once one is open).
class LogText {
  public:
    ~LogText();
    void put(char c);
    void open(const std::string& path, bool append);  // throws InvalidInput if it cannot
    void flush();

  private:
    void emit(const std::string& line);
    std::FILE* f_ = nullptr;
    std::string line_, held_;
    int escape_ = 0;  // 1: after ESC, 2: inside a CSI sequence ("ESC [ ... final byte")
};

class RunLog {
  public:
    // Copies std::cout and std::cerr into the log from now on (the console gets them as before).
    RunLog();
    ~RunLog();  // gives the streams back
    RunLog(const RunLog&) = delete;
    RunLog& operator=(const RunLog&) = delete;
    void open(const std::string& path, bool append) { text_.open(path, append); }
    // A line for the log only (an error that main prints to the console itself).
    void note(const std::string& line);

  private:
    class Tee : public std::streambuf {
      public:
        Tee(std::streambuf* console, LogText& log) : console_(console), log_(log) {}
        std::streambuf* console() const { return console_; }

      protected:
        int overflow(int c) override;
        std::streamsize xsputn(const char* s, std::streamsize n) override;
        int sync() override;

      private:
        std::streambuf* console_;
        LogText& log_;
    };
    LogText text_;
    Tee out_, err_;
};

}  // namespace meshlm
