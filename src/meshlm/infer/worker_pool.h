// An elastic pool of threads for the HTTP server: it starts threads as work arrives, up to a
// cap, and lets threads beyond its floor exit after they idle a while, so an idle server holds a
// few threads and a busy one at most `max_threads` (cpp-httplib's ThreadPool starts all of its
// threads at once and keeps them).
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <list>
#include <mutex>
#include <thread>
#include <vector>

namespace meshlm {

class WorkerPool {
  public:
    // min_threads stay once started; threads beyond them exit after `idle_exit` without work.
    WorkerPool(int min_threads, int max_threads, std::chrono::milliseconds idle_exit);
    ~WorkerPool();
    WorkerPool(const WorkerPool&) = delete;
    WorkerPool& operator=(const WorkerPool&) = delete;

    // Queues a job; a new thread starts when every thread is busy and the cap allows.
    void submit(std::function<void()> job);
    // Runs the jobs already queued, then joins every thread. Later submits are dropped.
    void shutdown();
    // Threads alive now.
    int threads() const;

  private:
    void work();
    void reap_locked();  // joins threads that have exited

    const int min_, max_;
    const std::chrono::milliseconds idle_exit_;
    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::deque<std::function<void()>> jobs_;
    std::list<std::thread> threads_;
    std::vector<std::thread::id> exited_;
    int live_ = 0, idle_ = 0;
    bool stop_ = false;
};

}  // namespace meshlm
