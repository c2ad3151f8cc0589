#include "worker/ops/op_table.h"

#include <vector>

#include "runtime/check.h"
#include "runtime/ops/op_registry.h"
#include "worker/ops/ops.h"

namespace coupler::worker {
namespace {

struct Runner {
  std::string_view op;
  OpFunction run;
  bool has_cuda = false;
};

// noop first: it is the op dispatch benchmarks run millions of times.
constexpr Runner kRunners[] = {
    {"noop", &RunNoop},
    {"import_csv", &RunImportCsv},
    {"column_stats", &RunColumnStats, true},
    {"group_by", &RunGroupBy, true},
    {"dedup", &RunDedup, true},
    {"join", &RunJoin, true},
    {"sort", &RunSort},
    {"standardize", &RunStandardize, true},
    {"filter_map", &RunFilterMap, true},
    {"filter", &RunFilter, true},
    {"select", &RunSelect},
    {"derive", &RunDerive, true},
    {"clip", &RunClip, true},
    {"cast", &RunCast, true},
    {"exec", &RunExec},
    {"write_csv", &RunWriteCsv},
    {"evaluate", &RunEvaluate, true},
    {"quantize", &RunQuantize},
    {"train", &RunTrain},
    {"mpi_exec", &RunMpiExec},
};

const std::vector<OpEntry>& Entries() {
  static const std::vector<OpEntry> entries = [] {
    std::vector<OpEntry> out;
    for (const Runner& runner : kRunners) {
      const ops::OpDef* def = ops::OpRegistry::Builtin().Find(runner.op);
      COUPLER_CHECK(def != nullptr) << "worker runner for op '" << runner.op
                                    << "', which the op registry does not declare";
      out.push_back({def, runner.run, runner.has_cuda});
    }
    return out;
  }();
  return entries;
}

}  // namespace

const OpEntry* FindOp(std::string_view name) {
  for (const OpEntry& op : Entries()) {
    if (op.def->name == name) return &op;
  }
  return nullptr;
}

std::span<const OpEntry> WorkerOps() { return Entries(); }

}  // namespace coupler::worker
