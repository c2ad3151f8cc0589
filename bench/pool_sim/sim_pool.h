// SimPool: many simulated workers against a real coordinator, on the real wire. Each has its own
// DEALER socket and its own CURVE key, put on the coordinator's allow-list
// (authorized/workers/) as an operator would, and speaks the worker protocol as `coupler worker`
// does: it registers (reporting what it holds, so a restarted coordinator adopts it), stamps
// the epoch it registered under, refuses older coordinators, heartbeats with what it runs,
// keeps every result until it is acknowledged and sends it again after registering, gives back
// what it has not started when asked (Reclaim), and drains. Tasks do nothing for `task_ms`
// each, `slots` at a time; a gang's leader holds its slots for `task_ms` as if its ranks ran.
// What it does not do is run ops: only jobs of noop (and tight) nodes make sense against it.
//
// It measures the coordinator, not the workers: a thread serves hundreds of simulated workers.
// Used by the scale test (tests/scale/) and by bench_pool_sim (docs/scale.md).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include <zmq.hpp>

#include "runtime/status.h"
#include "runtime/wire/messages.h"

namespace coupler::bench {

struct SimPoolOptions {
  std::string coordinator;  // the workers' endpoint, e.g. tcp://127.0.0.1:7100
  // The coordinator's key set (STATE/keys for a local one): each simulated worker's public key
  // is written to its authorized/workers/, and coordinator.pub read from it.
  std::string keys_dir;
  size_t workers = 10;
  uint32_t slots = 4;
  uint32_t prefetch = 4;
  int64_t task_ms = 0;  // how long each task "runs"
  int64_t gang_ms = -1;  // how long a gang's leader holds its ranks; below 0: task_ms
  int64_t heartbeat_ms = 500;
  size_t threads = 1;  // the simulated workers are dealt round-robin to these threads
  std::string id_prefix = "sim";
  // Distinct addresses (one host each, 10.x.y.z) unless set: then every worker says this one.
  std::string address;
};

class SimPool {
 public:
  // Makes the keys, authorizes them, connects and registers every worker, and runs them until
  // destroyed (or Stop).
  static Result<std::unique_ptr<SimPool>> Start(const SimPoolOptions& options);
  ~SimPool();
  SimPool(const SimPool&) = delete;
  SimPool& operator=(const SimPool&) = delete;

  void Stop();
  // Workers whose registration was answered at least once.
  size_t registered() const { return registered_.load(); }
  // How many times each (job, node, task) started, over the whole pool: once is the rule.
  using TaskRef = std::tuple<std::string, std::string, uint64_t>;
  std::map<TaskRef, uint32_t> Starts() const;
  uint64_t results_sent() const { return results_sent_.load(); }
  // Messages a worker dropped because an older coordinator sent them (the epoch fence).
  uint64_t refused_by_epoch() const { return refused_by_epoch_.load(); }

  struct Worker;  // sim_pool.cc

 private:
  explicit SimPool(SimPoolOptions options);
  void Serve(std::vector<Worker*> mine);
  void NoteStart(const wire::TaskSpec& task);

  SimPoolOptions options_;
  zmq::context_t ctx_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<std::thread> threads_;
  std::atomic<bool> stop_{false};
  std::atomic<size_t> registered_{0};
  std::atomic<uint64_t> results_sent_{0};
  std::atomic<uint64_t> refused_by_epoch_{0};
  mutable std::mutex starts_mu_;
  std::map<TaskRef, uint32_t> starts_;
};

}  // namespace coupler::bench
