// Both sides of a shuffle on the shared filesystem. A map task routes each row of its shard to
// one of P partitions by the hash of its key columns (relational::HashKeys: by value, the same on
// every worker) and writes one shuffle file per partition, empty ones included, so a reduce can tell a file
// that was never written from one with no rows. A reduce task reads its partition's file from every
// map task, in map order, and concatenates them with one dictionary per string column.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/io/table.h"
#include "runtime/status.h"
#include "worker/ops/op_context.h"

namespace coupler::worker {

// The columns `names` of `table`, in that order, moved out (unread columns stay behind).
// InvalidArgument naming a missing column and what the shard has.
Result<io::Table> Project(io::Table&& table, const std::vector<std::string>& names,
                          std::string_view where);

// The map side: `table`'s rows split by the hash of `keys` into `partitions` shuffle files written
// atomically under the task's output prefix (io::ShufflePartitionPath).
Status WriteRuns(const OpContext& context, io::Table&& table, const std::vector<std::string>& keys,
                 int64_t partitions, OpReport& report);

// The reduce side: every shuffle file of this task's partition (its input_paths), concatenated.
Result<io::Table> ReadPartition(const OpContext& context, OpReport& report);

}  // namespace coupler::worker
