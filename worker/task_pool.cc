#include "worker/task_pool.h"

#include <algorithm>
#include <chrono>

#include "kernels/device.h"
#include "runtime/logging.h"
#include "runtime/util/byte_size.h"
#include "worker/stale_temps.h"
#include "worker/task_runner.h"

namespace coupler::worker {

namespace {

std::vector<int> Ordinals(const std::vector<pool::GpuShareLedger::Device>& gpus) {
  std::vector<int> ordinals;
  for (const auto& g : gpus) ordinals.push_back(g.index);
  return ordinals;
}

}  // namespace

TaskPool::TaskPool(zmq::context_t& ctx, std::string wake_endpoint, uint32_t slots,
                   std::vector<pool::GpuShareLedger::Device> gpus, TaskEnvironment env)
    : ctx_(ctx),
      wake_endpoint_(std::move(wake_endpoint)),
      env_(std::move(env)),
      workdir_check_(env_.host_address),
      gpus_(Ordinals(gpus)),
      ledger_(gpus) {
  for (uint32_t i = 0; i < std::max(1u, slots); ++i) {
    threads_.emplace_back([this, i] { Loop(i); });
  }
}

TaskPool::~TaskPool() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    queue_.clear();  // a drained worker has none; an aborted one runs no more
    for (Running& r : running_tasks_) r.cancel->store(true);
  }
  cv_.notify_all();
  share_cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void TaskPool::Submit(std::vector<wire::TaskSpec> tasks) {
  {
    std::lock_guard lock(mu_);
    for (auto& t : tasks) queue_.push_back(std::move(t));
  }
  cv_.notify_all();
}

void TaskPool::CancelJob(const std::string& job_id) {
  std::lock_guard lock(mu_);
  for (Running& r : running_tasks_) {
    if (r.attempt.job_id == job_id) r.cancel->store(true);
  }
  std::erase_if(queue_, [&](const wire::TaskSpec& t) { return t.job_id == job_id; });
  share_cv_.notify_all();  // a task of the job waiting for a GPU share stops waiting
}

size_t TaskPool::Release(const std::vector<wire::TaskAttempt>& attempts) {
  std::lock_guard lock(mu_);
  auto named = [&](const std::string& job, uint64_t task, uint32_t attempt) {
    return std::any_of(attempts.begin(), attempts.end(), [&](const wire::TaskAttempt& a) {
      return a.task_id == task && a.attempt == attempt && a.job_id == job;
    });
  };
  size_t n = std::erase_if(queue_, [&](const wire::TaskSpec& t) {
    return named(t.job_id, t.task_id, t.attempt);
  });
  for (Running& r : running_tasks_) {
    if (!r.released && named(r.attempt.job_id, r.attempt.task_id, r.attempt.attempt)) {
      r.released = true;
      r.cancel->store(true);
      ++n;
    }
  }
  share_cv_.notify_all();
  return n;
}

std::vector<wire::TaskAttempt> TaskPool::ReleaseQueued(const std::vector<wire::TaskAttempt>& attempts) {
  std::lock_guard lock(mu_);
  std::vector<wire::TaskAttempt> released;
  // Under the lock a slot takes its next task by: a task is either still here or started.
  std::erase_if(queue_, [&](const wire::TaskSpec& t) {
    const bool named = std::any_of(attempts.begin(), attempts.end(), [&](const wire::TaskAttempt& a) {
      return a.task_id == t.task_id && a.attempt == t.attempt && a.job_id == t.job_id;
    });
    if (named) released.push_back({t.job_id, t.task_id, t.attempt});
    return named;
  });
  return released;
}

std::vector<wire::TaskAttempt> TaskPool::ReleaseAllQueued() {
  std::lock_guard lock(mu_);
  std::vector<wire::TaskAttempt> released;
  // A gang's attempt stays: its ranks' slots here and on other workers are reserved for it
  // (placed, not merely queued), so it starts and finishes here as a running task would.
  std::erase_if(queue_, [&](const wire::TaskSpec& t) {
    if (t.kind == wire::TaskKind::kGang) return false;
    released.push_back({t.job_id, t.task_id, t.attempt});
    return true;
  });
  return released;
}

std::vector<wire::HeldAttempt> TaskPool::Held() const {
  std::lock_guard lock(mu_);
  std::vector<wire::HeldAttempt> out;
  for (const Running& r : running_tasks_) {
    if (!r.released) out.push_back({r.attempt, true});
  }
  for (const wire::TaskSpec& t : queue_) {
    out.push_back({{t.job_id, t.task_id, t.attempt}, false});
  }
  return out;
}

std::vector<wire::TaskAttempt> TaskPool::RunningTasks() const {
  std::lock_guard lock(mu_);
  std::vector<wire::TaskAttempt> out;
  out.reserve(running_tasks_.size());
  for (const Running& r : running_tasks_) out.push_back(r.attempt);
  return out;
}

std::vector<wire::TaskOutcome> TaskPool::TakeOutcomes() {
  std::lock_guard lock(mu_);
  std::vector<wire::TaskOutcome> out;
  out.swap(outcomes_);
  return out;
}

double TaskPool::mean_task_us() const {
  std::lock_guard lock(mu_);
  return mean_task_us_;
}

size_t TaskPool::held() const {
  std::lock_guard lock(mu_);
  return queue_.size() + running_.load();
}

wire::TaskOutcome TaskPool::RunPlaced(const wire::TaskSpec& task, const std::atomic<bool>* cancel,
                                      const TaskPlacement& placement) {
  if (Status visible = workdir_check_.Check(task); !visible.ok()) {
    wire::TaskOutcome outcome;
    outcome.job_id = task.job_id;
    outcome.task_id = task.task_id;
    outcome.attempt = task.attempt;
    outcome.device = "cpu";
    outcome.host_refused = true;
    outcome.error = std::string(visible.message());
    return outcome;
  }
  const uint64_t share = task.gpu_memory_bytes;
  if (share == 0 || ledger_.empty()) {
    return RunTask(task, cancel, placement, &env_.gang, env_.task_log_bytes);
  }
  if (!ledger_.CanEverFit(share)) {
    wire::TaskOutcome outcome;
    outcome.job_id = task.job_id;
    outcome.task_id = task.task_id;
    outcome.attempt = task.attempt;
    outcome.device = "cpu";
    outcome.error = task.op + ": ResourceExhausted: asks for " + util::FormatBytes(share) +
                    " of one GPU (resources.gpu_memory), but the largest GPU here has " +
                    util::FormatBytes(ledger_.largest_capacity());
    return outcome;
  }
  std::optional<int> device;
  {
    std::unique_lock lock(mu_);
    share_cv_.wait(lock, [&] {
      if (stopping_ || (cancel != nullptr && cancel->load())) return true;
      device = ledger_.Reserve(share);
      return device.has_value();
    });
  }
  if (!device) {  // stopping or cancelled
    return RunTask(task, cancel, placement, &env_.gang, env_.task_log_bytes);
  }
  // The thread's own device is put back afterwards for the tasks without a share.
  TaskPlacement shared{kernels::Backend::kCuda, *device};
  if (const Status used = kernels::UseCudaDevice(*device); !used.ok()) shared = {};
  wire::TaskOutcome outcome =
      RunTask(task, cancel, shared, &env_.gang, env_.task_log_bytes);
  if (placement.backend == kernels::Backend::kCuda && placement.device != *device) {
    (void)kernels::UseCudaDevice(placement.device);
  }
  {
    std::lock_guard lock(mu_);
    ledger_.Release(*device, share);
  }
  share_cv_.notify_all();
  return outcome;
}

void TaskPool::SetFencedGpus(const std::vector<uint32_t>& gpus) {
  std::vector<int> fenced(gpus.begin(), gpus.end());
  {
    std::lock_guard lock(mu_);
    if (fenced == fenced_) return;
    fenced_ = fenced;
    ledger_.SetFenced(fenced);
  }
  if (fenced.empty()) {
    Logger("worker")->info("no GPU fenced any more: tasks use every GPU again");
  } else {
    std::string list;
    for (const int g : fenced) list += (list.empty() ? "" : ", ") + std::to_string(g);
    Logger("worker")->warn("the coordinator fenced GPU(s) {}: new tasks start on the others", list);
  }
  share_cv_.notify_all();  // a share waiting for room may find it elsewhere now, or lose it
}

void TaskPool::Loop(size_t slot) {
  // The CUDA twins run on the calling thread's current device: set it once for this thread.
  // A device that refuses leaves the thread on the CPU twins, and its tasks say so.
  TaskPlacement placement = PlacementForSlot(gpus_, slot);
  bool device_failed = false;
  if (placement.backend == kernels::Backend::kCuda) {
    if (const Status used = kernels::UseCudaDevice(placement.device); !used.ok()) {
      Logger("worker")->warn("task thread {}: {}; its tasks run on the CPU", slot,
                             used.ToString());
      placement = {};
      device_failed = true;
    }
  }
  // One PUSH socket per thread: ZeroMQ sockets are not shared between threads.
  zmq::socket_t wake(ctx_, zmq::socket_type::push);
  wake.set(zmq::sockopt::linger, 0);
  wake.connect(wake_endpoint_);
  for (;;) {
    wire::TaskSpec task;
    std::shared_ptr<std::atomic<bool>> cancel;
    bool idle_before = false;
    TaskPlacement wanted = placement;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and nothing left
      if (!device_failed) wanted = PlacementAvoiding(gpus_, slot, fenced_);
      task = std::move(queue_.front());
      queue_.pop_front();
      cancel = std::make_shared<std::atomic<bool>>(false);
      idle_before = running_.fetch_add(1) == 0;
      running_tasks_.push_back({{task.job_id, task.task_id, task.attempt}, cancel});
      starts_.fetch_add(1);
    }
    if (wanted != placement) {
      // A fence came or went: this thread's tasks move to `wanted` (another GPU, or the CPU).
      if (wanted.backend == kernels::Backend::kCuda) {
        if (const Status used = kernels::UseCudaDevice(wanted.device); !used.ok()) wanted = {};
      }
      placement = wanted;
    }
    // The first start after idle wakes the network thread, which reports it at once; later
    // ones ride on the wake-ups that outcomes bring.
    if (idle_before) (void)wake.send(zmq::str_buffer("s"), zmq::send_flags::dontwait);
    // A retry may follow an attempt killed mid-write: clear what it left behind.
    if (task.attempt > 0 && !task.output_path.empty()) RemoveStaleTemps(task.output_path);
    for (const wire::FusedStep& step : task.fused) {
      if (task.attempt > 0 && !step.output_path.empty()) RemoveStaleTemps(step.output_path);
    }
    const auto started = std::chrono::steady_clock::now();
    wire::TaskOutcome outcome = RunPlaced(task, cancel.get(), placement);
    const double us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - started).count();
    outcome.wall_ms = us / 1000.0;
    bool first = false;
    {
      std::lock_guard lock(mu_);
      mean_task_us_ = mean_task_us_ == 0 ? us : 0.9 * mean_task_us_ + 0.1 * us;
      bool released = false;
      std::erase_if(running_tasks_, [&](const Running& r) {
        const bool mine = r.cancel == cancel;
        released |= mine && r.released;
        return mine;
      });
      --running_;
      // A released attempt is another's now: its outcome would only be dropped as stale.
      first = outcomes_.empty() && !released;
      if (!released) outcomes_.push_back(std::move(outcome));
    }
    // Only the outcome that makes the queue non-empty wakes the owner; it takes them all, so
    // fast tasks cost one wake per batch, not one per task.
    if (!first) continue;
    try {
      wake.send(zmq::str_buffer("!"), zmq::send_flags::dontwait);
    } catch (const zmq::error_t&) {
      // The owner is shutting down; the outcome stays queued for TakeOutcomes.
    }
  }
}

}  // namespace coupler::worker
