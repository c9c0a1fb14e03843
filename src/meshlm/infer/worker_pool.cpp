#include "meshlm/infer/worker_pool.h"

#include <algorithm>

namespace meshlm {

WorkerPool::WorkerPool(int min_threads, int max_threads, std::chrono::milliseconds idle_exit)
    : min_(std::max(0, min_threads)),
      max_(std::max({1, min_threads, max_threads})),
      idle_exit_(idle_exit) {}

WorkerPool::~WorkerPool() {
    shutdown();
}

void WorkerPool::submit(std::function<void()> job) {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return;
    reap_locked();
    jobs_.push_back(std::move(job));
    // Idle threads take queued jobs one each; a job no idle thread will take gets a new thread.
    if (static_cast<int>(jobs_.size()) > idle_ && live_ < max_) {
        ++live_;
        threads_.emplace_back([this] { work(); });
    } else {
        cv_.notify_one();
    }
}

void WorkerPool::work() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
        ++idle_;
        const bool woken =
            cv_.wait_for(lock, idle_exit_, [this] { return stop_ || !jobs_.empty(); });
        --idle_;
        if (jobs_.empty()) {
            if (stop_ || (!woken && live_ > min_)) break;
            continue;
        }
        std::function<void()> job = std::move(jobs_.front());
        jobs_.pop_front();
        lock.unlock();
        job();
        job = nullptr;  // what the job holds (a connection) is let go outside the lock
        lock.lock();
    }
    --live_;
    exited_.push_back(std::this_thread::get_id());
}

void WorkerPool::reap_locked() {
    for (const std::thread::id id : exited_) {
        auto it = std::find_if(threads_.begin(), threads_.end(),
                               [id](const std::thread& t) { return t.get_id() == id; });
        if (it == threads_.end()) continue;
        it->join();  // it has left work(): returns at once
        threads_.erase(it);
    }
    exited_.clear();
}

void WorkerPool::shutdown() {
    std::list<std::thread> all;
    {
        std::lock_guard<std::mutex> lock(mu_);
        stop_ = true;
        all.swap(threads_);
        exited_.clear();
    }
    cv_.notify_all();
    for (std::thread& t : all) t.join();
}

int WorkerPool::threads() const {
    std::lock_guard<std::mutex> lock(mu_);
    return live_;
}

}  // namespace meshlm
