// dedup: pandas' drop_duplicates(subset=keys, keep=...) through a shuffle. Each map task routes
// every row of its shard (all columns) by the hash of its keys; each reduce task keeps, of the
// rows of its partition with equal keys, the first (or last) in input order — shuffle files are read in
// map order and keep their rows' order — and writes them in input order. A missing key equals
// another missing key, as in pandas.
#include <algorithm>

#include "runtime/ops/op_def.h"
#include "runtime/relational/table_rows.h"
#include "worker/ops/ops.h"
#include "worker/ops/shard_io.h"
#include "worker/ops/shuffle_files.h"

namespace coupler::worker {
namespace {

// The key columns: those named, or every column of the table (pandas' subset=None).
Result<std::vector<std::string>> Keys(const OpContext& context, const io::Table& table) {
  COUPLER_ASSIGN_OR_RETURN(const std::optional<std::vector<std::string>> named,
                           context.spec.params.Optional<std::vector<std::string>>("keys"));
  if (named && !named->empty()) return *named;
  std::vector<std::string> all;
  for (const io::Column& c : table.columns()) all.push_back(c.name());
  return all;
}

Status RunMap(const OpContext& context, OpReport& report) {
  COUPLER_ASSIGN_OR_RETURN(const std::string input, InputPath(context, 0, "[data shard]"));
  COUPLER_ASSIGN_OR_RETURN(const int64_t partitions,
                           context.spec.params.Get<int64_t>(std::string(ops::kPartitionsParam)));
  // Every column travels (no column filter: all are loaded): the rows kept are whole rows.
  COUPLER_ASSIGN_OR_RETURN(io::Table table, ReadShard(input, report));
  report.rows_in = table.rows();
  COUPLER_ASSIGN_OR_RETURN(const std::vector<std::string> keys, Keys(context, table));
  COUPLER_RETURN_IF_ERROR(relational::ColumnIndexes(table, keys, "key column").status());
  return WriteRuns(context, std::move(table), keys, partitions, report);
}

Status RunReduce(const OpContext& context, OpReport& report) {
  COUPLER_ASSIGN_OR_RETURN(const std::string output, OutputPath(context));
  COUPLER_ASSIGN_OR_RETURN(const std::string keep, context.spec.params.Get<std::string>("keep"));
  COUPLER_ASSIGN_OR_RETURN(const io::Table rows, ReadPartition(context, report));
  if (context.Cancelled()) return Cancelled();
  COUPLER_ASSIGN_OR_RETURN(const std::vector<std::string> keys, Keys(context, rows));
  COUPLER_ASSIGN_OR_RETURN(const std::vector<size_t> key_index,
                           relational::ColumnIndexes(rows, keys, "key column"));
  std::vector<uint32_t> kept;
  {
    KernelTimer timer(report.kernel_ms);
    const relational::RowGroups groups = relational::GroupRows(rows, key_index, false);
    kept = groups.first_row;
    if (keep == "last") {
      for (size_t r = 0; r < rows.rows(); ++r) kept[groups.of_row[r]] = static_cast<uint32_t>(r);
    }
    std::sort(kept.begin(), kept.end());  // input order
  }
  io::Table out = relational::TakeRows(rows, kept);
  report.rows_out = out.rows();
  return WriteShard(output, std::move(out), report);
}

}  // namespace

Status RunDedup(const OpContext& context, OpReport& report) {
  return RunMapOrReduce(context, report, &RunMap, &RunReduce);
}

}  // namespace coupler::worker
