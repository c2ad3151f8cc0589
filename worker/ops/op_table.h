// The registry's ops (runtime/ops/op_registry.h) with the function a worker runs each with. The
// registry declares what an op is; this attaches how a worker executes it, so the two tables
// cannot drift apart: a runner for an op the registry lacks stops the worker at start, and
// OpTableTest checks every registered op has a runner.
#pragma once

#include <span>
#include <string_view>

#include "runtime/ops/op_def.h"
#include "worker/ops/op_context.h"

namespace coupler::worker {

struct OpEntry {
  const ops::OpDef* def = nullptr;  // the registry's declaration
  OpFunction run = nullptr;
  bool has_cuda = false;  // its kernels have CUDA twins (RunKernel picks them)

  std::string_view name() const { return def->name; }
};

// nullptr for a name the registry does not know.
const OpEntry* FindOp(std::string_view name);

std::span<const OpEntry> WorkerOps();

}  // namespace coupler::worker
