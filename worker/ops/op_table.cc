#include "worker/ops/op_table.h"

#include "worker/ops/ops.h"

namespace coupler::worker {
namespace {

// noop first: it is the op dispatch benchmarks run millions of times.
constexpr OpEntry kOps[] = {
    {"noop", &RunNoop, {}},
    {"import_csv", &RunImportCsv, {}},
    {"column_stats", &RunColumnStats, {}, true},
    {"standardize", &RunStandardize, {}, true},
    {"filter_map", &RunFilterMap, {}, true},
    {"clip", &RunClip, {}, true},
    {"cast", &RunCast, {}, true},
    {"exec", &RunExec, {}},
    {"evaluate", &RunEvaluate, {}},
    {"train", &RunTrain, {}},
    {"mpi_exec", &RunMpiExec, {}},
};

}  // namespace

const OpEntry* FindOp(std::string_view name) {
  for (const OpEntry& op : kOps) {
    if (op.name == name) return &op;
  }
  return nullptr;
}

std::span<const OpEntry> WorkerOps() { return kOps; }

}  // namespace coupler::worker
