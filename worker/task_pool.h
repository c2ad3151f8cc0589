// TaskPool: the worker's `slots` threads. Tasks go in from the network thread; outcomes come
// out through a queue, and each outcome pokes an inproc ZeroMQ socket so the network thread,
// which sleeps in zmq poll, wakes at once instead of polling on a timer.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <zmq.hpp>

#include "runtime/wire/worker_messages.h"
#include "runtime/pool/gpu_share_ledger.h"
#include "worker/ops/gang_launch.h"
#include "worker/task_device.h"
#include "worker/task_log.h"
#include "worker/workdir_check.h"

namespace coupler::worker {

// What the worker tells every task beside its spec.
struct TaskEnvironment {
  std::string host_address;  // the address the worker advertises (workdir check, gangs)
  GangSetup gang;  // how the gangs it leads start (mpirun and its hook, or Slurm steps)
  size_t task_log_bytes = kDefaultTaskLogBytes;  // each task log file's bound
};

class TaskPool {
 public:
  // `wake_endpoint` is an inproc address the owner has bound a PULL socket to. `gpus` are the
  // devices the tasks may use: thread i runs its kernels on gpus[i % gpus.size()]
  // (worker/task_device.h), or on the CPU when `gpus` is empty. A task that asks for a share
  // of a GPU (gpu_memory) instead runs on the device the share ledger packs it onto, waiting
  // while none has room, under a ScopedDeviceShare of that size.
  TaskPool(zmq::context_t& ctx, std::string wake_endpoint, uint32_t slots,
           std::vector<pool::GpuShareLedger::Device> gpus = {}, TaskEnvironment env = {});
  ~TaskPool();
  TaskPool(const TaskPool&) = delete;
  TaskPool& operator=(const TaskPool&) = delete;

  void Submit(std::vector<wire::TaskSpec> tasks);
  // Cancels a job's tasks: queued ones are dropped, running ones are told to stop.
  void CancelJob(const std::string& job_id);
  // The coordinator says these attempts are not this worker's to run any more (Registered's
  // release): queued ones are dropped, running ones are told to stop and their outcomes are
  // never reported. Returns how many it held.
  size_t Release(const std::vector<wire::TaskAttempt>& attempts);
  // The coordinator asks for these attempts back (Reclaim): those still queued, never started,
  // are dropped and returned; the others run on.
  std::vector<wire::TaskAttempt> ReleaseQueued(const std::vector<wire::TaskAttempt>& attempts);
  // Draining: every queued loose task is dropped and returned, so the coordinator deals it to
  // a worker that stays; the running ones, and a gang placed here, finish here.
  std::vector<wire::TaskAttempt> ReleaseAllQueued();
  // GPUs the coordinator fenced off (its heartbeats carry them): tasks that start from now on
  // run on the thread's next unfenced GPU, or on the CPU when all are; shares skip them.
  // Running tasks finish where they are.
  void SetFencedGpus(const std::vector<uint32_t>& gpus);
  // What it holds, for a registration: queued (started false) and running attempts.
  std::vector<wire::HeldAttempt> Held() const;
  // Outcomes finished since the last call.
  std::vector<wire::TaskOutcome> TakeOutcomes();
  // Tasks queued or running.
  size_t held() const;
  size_t running() const { return running_.load(); }
  // The tasks its slots run now, and how many were started so far (to report starts early).
  std::vector<wire::TaskAttempt> RunningTasks() const;
  uint64_t starts() const { return starts_.load(); }
  // Moving average of how long a task takes here, in microseconds (0 before the first).
  double mean_task_us() const;

 private:
  void Loop(size_t slot);
  // Runs one task on `placement`, or on the GPU share the ledger gives it.
  wire::TaskOutcome RunPlaced(const wire::TaskSpec& task, const std::atomic<bool>* cancel,
                              const TaskPlacement& placement);

  zmq::context_t& ctx_;
  std::string wake_endpoint_;
  const TaskEnvironment env_;
  WorkdirCheck workdir_check_;
  const std::vector<int> gpus_;
  pool::GpuShareLedger ledger_;  // guarded by mu_
  std::vector<int> fenced_;      // guarded by mu_
  std::condition_variable share_cv_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<wire::TaskSpec> queue_;
  std::vector<wire::TaskOutcome> outcomes_;
  std::atomic<size_t> running_{0};
  std::atomic<uint64_t> starts_{0};
  // What the slots run, each with its own stop flag (a cancel stops a job's, a release one
  // attempt's). Guarded by mu_.
  struct Running {
    wire::TaskAttempt attempt;
    std::shared_ptr<std::atomic<bool>> cancel;
    bool released = false;  // its outcome is dropped, not reported
  };
  std::vector<Running> running_tasks_;
  double mean_task_us_ = 0;  // guarded by mu_
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace coupler::worker
