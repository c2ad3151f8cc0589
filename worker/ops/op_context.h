// What a loose op receives (the task, where its kernels should run, a cancel flag) and what it
// reports back (outputs, rows, kernel time, bytes, the backend that actually ran); RunTask
// (worker/task_runner.h) turns the report into a wire::TaskOutcome.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "runtime/status.h"
#include "runtime/wire/worker_messages.h"
#include "worker/ops/gang_launch.h"
#include "worker/task_device.h"
#include "worker/task_log.h"

namespace coupler::worker {

class ShardStage;

struct OpContext {
  const wire::TaskSpec& spec;
  const std::atomic<bool>* cancel = nullptr;
  // The backend RunTask chose; an op's kernels run there through RunKernel.
  TaskPlacement placement;
  // How a gang leader starts its ranks (worker/ops/gang_launch.h); null: plain mpirun.
  const GangSetup* gang = nullptr;
  // The attempt's stdout/stderr logs, which an op's command prints into (RunOpCommand).
  TaskAttemptLogs* logs = nullptr;

  bool Cancelled() const { return cancel != nullptr && cancel->load(std::memory_order_relaxed); }
};

struct OpReport {
  std::vector<std::string> output_paths;
  uint64_t rows_in = 0;
  uint64_t rows_out = 0;
  double kernel_ms = 0;  // time inside kernels only, not file I/O
  uint64_t bytes_read = 0;
  uint64_t bytes_written = 0;
  // The backend the op's kernels ran on: RunTask starts it at the chosen placement's backend
  // and RunKernel drops it to the CPU when the CUDA twin answers Unavailable.
  kernels::Backend backend = kernels::Backend::kCpu;
  bool used_cuda = false;       // a kernel of this task ran on the GPU
  std::string fallback_reason;  // why a CUDA placement ended on the CPU; empty otherwise
  // In a fused chain, where shards handed to the next op in memory are parked (shard_stage.h);
  // null otherwise. ReadShard and WriteShard consult it.
  ShardStage* stage = nullptr;
};

// Runs kernel(backend) on report.backend. When the CUDA twin answers Unavailable (a CPU-only
// build, or a device that cannot be used after all), the call is repeated on the CPU twin and
// every later kernel of the task stays there: the task succeeds, and its outcome shows it ran
// on the CPU. The CUDA twins check availability before touching any output, so the repeat
// starts from the original data. Other errors (ResourceExhausted included) are returned.
inline const Status& StatusOf(const Status& status) { return status; }
template <typename T>
const Status& StatusOf(const Result<T>& result) {
  return result.status();
}

template <typename Kernel>
auto RunKernel(OpReport& report, Kernel&& kernel) -> decltype(kernel(kernels::Backend::kCpu)) {
  if (report.backend == kernels::Backend::kCuda) {
    auto result = kernel(kernels::Backend::kCuda);
    const Status& status = StatusOf(result);
    report.used_cuda = report.used_cuda || status.ok();
    if (status.ok() || status.code() != StatusCode::kUnavailable) return result;
    report.fallback_reason = std::string(status.message());
    report.backend = kernels::Backend::kCpu;
  }
  return kernel(kernels::Backend::kCpu);
}

// An op's body. A failed Status becomes the outcome's error; Cancelled (runtime/status.h), which
// an op returns when it notices the cancel flag, makes the outcome a cancelled one.
using OpFunction = Status (*)(const OpContext& context, OpReport& report);

// Adds the time from construction to destruction to `kernel_ms`: wrap exactly the kernel calls,
// so the outcome separates compute from I/O.
class KernelTimer {
 public:
  explicit KernelTimer(double& kernel_ms)
      : kernel_ms_(kernel_ms), start_(std::chrono::steady_clock::now()) {}
  ~KernelTimer() {
    kernel_ms_ += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() -
                                                            start_).count();
  }
  KernelTimer(const KernelTimer&) = delete;
  KernelTimer& operator=(const KernelTimer&) = delete;

 private:
  double& kernel_ms_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace coupler::worker
