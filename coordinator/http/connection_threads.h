// cpp-httplib's task queue for the coordinator: each accepted connection on a thread of its
// own, up to a cap. cpp-httplib's ThreadPool runs a connection on one of N threads from
// accept to close, so N connections that send nothing held every thread (4 were enough to
// keep the liveness probe out for a minute); here an idle connection holds only its own
// thread, and ConnectionGate bounds how many there are.
#pragma once

#include <httplib.h>

#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "coordinator/http/connection_gate.h"

namespace coupler::coordinator::http {

class ConnectionThreads final : public httplib::TaskQueue {
 public:
  // Past `max_threads` connections wait, in order, for a thread to finish. Above the gate's
  // cap, so that a new connection always finds a thread to be admitted (or refused) on.
  ConnectionThreads(size_t max_threads, ConnectionGate& gate) : max_threads_(max_threads), gate_(gate) {}
  ~ConnectionThreads() override { shutdown(); }

  void enqueue(std::function<void()> fn) override;
  // Shuts every connection down, runs what still waits (each closes its socket) and joins.
  void shutdown() override;

 private:
  void Work(std::function<void()> task);
  void ReapLocked();

  const size_t max_threads_;
  ConnectionGate& gate_;
  std::mutex mu_;
  std::condition_variable wake_;  // a task waits, or the queue stops
  std::condition_variable ended_;  // a thread ended
  std::deque<std::function<void()>> waiting_;
  std::map<std::thread::id, std::thread> threads_;
  std::vector<std::thread> finished_;  // ended, to be joined
  size_t idle_ = 0;
  bool stopping_ = false;
};

}  // namespace coupler::coordinator::http
