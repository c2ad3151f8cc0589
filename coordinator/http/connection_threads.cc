#include "coordinator/http/connection_threads.h"

#include <chrono>
#include <system_error>

namespace coupler::coordinator::http {
namespace {

// A thread left without a connection waits this long for the next one before it ends: a
// burst's threads go away, a steady scraper's stay.
constexpr std::chrono::seconds kIdleThreadLife{30};

}  // namespace

void ConnectionThreads::enqueue(std::function<void()> fn) {
  std::lock_guard<std::mutex> lock(mu_);
  ReapLocked();
  if (idle_ == 0 && threads_.size() < max_threads_ && !stopping_) {
    try {
      std::thread t([this, task = fn]() mutable { Work(std::move(task)); });
      threads_.emplace(t.get_id(), std::move(t));
      return;
    } catch (const std::system_error&) {
      // Out of threads for now: it waits for one, as past the cap.
    }
  }
  waiting_.push_back(std::move(fn));
  wake_.notify_one();
}

void ConnectionThreads::Work(std::function<void()> task) {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    lock.unlock();
    if (task) task();
    task = nullptr;
    lock.lock();
    if (waiting_.empty() && !stopping_) {
      ++idle_;
      wake_.wait_for(lock, kIdleThreadLife, [this] { return !waiting_.empty() || stopping_; });
      --idle_;
    }
    if (waiting_.empty()) break;
    task = std::move(waiting_.front());
    waiting_.pop_front();
  }
  auto self = threads_.find(std::this_thread::get_id());
  if (self != threads_.end()) {
    finished_.push_back(std::move(self->second));
    threads_.erase(self);
  }
  ended_.notify_all();
}

void ConnectionThreads::ReapLocked() {
  for (std::thread& t : finished_) t.join();  // each has left Work, so this returns at once
  finished_.clear();
}

void ConnectionThreads::shutdown() {
  std::unique_lock<std::mutex> lock(mu_);
  stopping_ = true;
  wake_.notify_all();
  lock.unlock();
  gate_.ShutdownAll();
  lock.lock();
  // Tasks that never got a thread still own their sockets: run here, each ends at once.
  while (!waiting_.empty()) {
    std::function<void()> task = std::move(waiting_.front());
    waiting_.pop_front();
    lock.unlock();
    task();
    lock.lock();
  }
  ended_.wait(lock, [this] { return threads_.empty(); });
  ReapLocked();
}

}  // namespace coupler::coordinator::http
