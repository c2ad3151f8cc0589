// Where a loose task's kernels run: the CUDA twin on one of the worker's GPUs when it has any
// and the op has a CUDA kernel, else the CPU twin. Pure (no CUDA calls), so the policy is
// unit-tested on machines without a GPU; the task pool applies it (UseCudaDevice per thread).
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/backend.h"
#include "runtime/status.h"

namespace coupler::worker {

struct TaskPlacement {
  kernels::Backend backend = kernels::Backend::kCpu;
  int device = -1;  // the CUDA ordinal when backend is kCuda

  friend bool operator==(const TaskPlacement&, const TaskPlacement&) = default;
};

// The placement of the pool thread `slot`: threads take the worker's GPUs in turn
// (gpus[slot % gpus.size()]), so a worker with more slots than GPUs shares each device among
// several threads, each on its own stream. No GPUs: the CPU.
TaskPlacement PlacementForSlot(std::span<const int> gpus, size_t slot);

// The same, avoiding the `fenced` devices (the coordinator's GPU fences): the slot's own
// device when it is not fenced, else the next one in turn that is not, else the CPU.
TaskPlacement PlacementAvoiding(std::span<const int> gpus, size_t slot, std::span<const int> fenced);

// "cpu" or "cuda:N": what task results, `status` and the run summary show as the device.
std::string DeviceLabel(const TaskPlacement& placement);

// The worker's --gpus value against the `visible` CUDA devices: "" or "all" = every visible
// device, "none" = none (CPU only), else a comma list of distinct ordinals, e.g. "0,2".
// InvalidArgument naming the entry for a malformed, repeated or invisible ordinal.
Result<std::vector<int>> ParseGpuList(std::string_view text, int visible);

}  // namespace coupler::worker
