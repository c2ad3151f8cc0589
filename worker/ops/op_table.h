// Op name -> the function that runs it on a worker. Ops the planner knows but a worker cannot
// run yet have no function, only the reason, which becomes the task's error.
#pragma once

#include <span>
#include <string_view>

#include "worker/ops/op_context.h"

namespace coupler::worker {

struct OpEntry {
  std::string_view name;
  OpFunction run = nullptr;        // nullptr: not runnable yet
  std::string_view unavailable;    // why, when run is nullptr
  bool has_cuda = false;           // its kernels have CUDA twins (RunKernel picks them)
};

// nullptr for a name no worker knows.
const OpEntry* FindOp(std::string_view name);

std::span<const OpEntry> WorkerOps();

}  // namespace coupler::worker
