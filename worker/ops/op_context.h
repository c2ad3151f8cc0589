// What a loose op receives (the task and a cancel flag) and what it reports back (outputs, rows,
// kernel time, bytes); RunTask (worker/task_runner.h) turns the report into a wire::TaskOutcome.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/status.h"
#include "runtime/wire/worker_messages.h"

namespace coupler::worker {

struct OpContext {
  const wire::TaskSpec& spec;
  const std::atomic<bool>* cancel = nullptr;

  bool Cancelled() const { return cancel != nullptr && cancel->load(std::memory_order_relaxed); }
};

struct OpReport {
  std::vector<std::string> output_paths;
  uint64_t rows_in = 0;
  uint64_t rows_out = 0;
  double kernel_ms = 0;  // time inside kernels only, not file I/O
  uint64_t bytes_read = 0;
  uint64_t bytes_written = 0;
};

// An op's body. A failed Status becomes the outcome's error; Aborted means cancelled.
using OpFunction = Status (*)(const OpContext& context, OpReport& report);

// The Status an op returns when it notices the cancel flag.
inline Status Cancelled() { return Aborted("cancelled"); }

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
