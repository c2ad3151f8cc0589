// The ops a worker runs, one file each (worker/ops/<op>_op.cc). Their TaskSpec conventions
// are documented in worker/task_runner.h; op_table.h maps names to these functions.
#pragma once

#include "runtime/status.h"
#include "worker/ops/op_context.h"

namespace coupler::worker {

Status RunImportCsv(const OpContext& context, OpReport& report);
Status RunColumnStats(const OpContext& context, OpReport& report);
// A shuffle: map tasks route rows to partitions, reduce tasks aggregate each partition.
Status RunGroupBy(const OpContext& context, OpReport& report);
Status RunDedup(const OpContext& context, OpReport& report);
Status RunJoin(const OpContext& context, OpReport& report);
Status RunSort(const OpContext& context, OpReport& report);
Status RunStandardize(const OpContext& context, OpReport& report);
Status RunFilterMap(const OpContext& context, OpReport& report);
Status RunFilter(const OpContext& context, OpReport& report);
Status RunSelect(const OpContext& context, OpReport& report);
Status RunDerive(const OpContext& context, OpReport& report);
Status RunClip(const OpContext& context, OpReport& report);
Status RunCast(const OpContext& context, OpReport& report);
Status RunNoop(const OpContext& context, OpReport& report);
Status RunExec(const OpContext& context, OpReport& report);
Status RunWriteCsv(const OpContext& context, OpReport& report);
Status RunEvaluate(const OpContext& context, OpReport& report);
Status RunQuantize(const OpContext& context, OpReport& report);
// The leader's part of a tight `train` node: launches the whole gang under mpirun.
Status RunTrain(const OpContext& context, OpReport& report);
Status RunMpiExec(const OpContext& context, OpReport& report);

}  // namespace coupler::worker
