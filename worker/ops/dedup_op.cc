// dedup: pandas' drop_duplicates(subset=keys, keep=...) through a shuffle. Each map task routes
// every row of its shard (all columns) by the hash of its keys; each reduce task keeps, of the
// rows of its partition with equal keys, the first (or last) in input order — shuffle files are read in
// map order and keep their rows' order — and writes them in input order. A missing key equals
// another missing key, as in pandas. A partition past the reduce's memory budget is sorted by
// key in runs on disk and merged instead, the kept rows put back in input order the same way.
#include <algorithm>

#include "runtime/io/npz_stream_writer.h"
#include "runtime/ops/op_def.h"
#include "runtime/relational/table_rows.h"
#include "worker/ops/ops.h"
#include "worker/ops/reduce_spill.h"
#include "worker/ops/shard_io.h"
#include "worker/ops/shuffle_files.h"

namespace coupler::worker {
namespace {

// Past the budget, each row's place in the partition's input (reduce_spill.h), dropped on output.
constexpr char kPositionColumn[] = "__coupler_input_row";

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

Status ReduceInMemory(const OpContext& context, OpReport& report, const std::string& keep,
                      const std::string& output) {
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

// Past the budget (reduce_spill.h): the partition's rows, each with its place in the input, as
// sorted runs by key; merged, the first (or last) row of each key kept; the kept rows as sorted
// runs by their place; merged again, in input order, into the part file.
Status ReduceSpilling(const OpContext& context, OpReport& report, const std::string& keep,
                      const std::string& output, uint64_t budget) {
  const std::vector<std::string>& inputs = context.spec.input_paths;
  if (inputs.empty()) return InvalidArgument("the reduce task has no shuffle files to read");
  COUPLER_ASSIGN_OR_RETURN(const io::Table first,
                           ReadShard(inputs.front(), report, [](const io::ColumnInfo&) { return false; }));
  COUPLER_ASSIGN_OR_RETURN(const std::vector<std::string> keys, Keys(context, first));
  COUPLER_ASSIGN_OR_RETURN(const SpillDir dir, SpillDir::Create(output));
  const std::vector<relational::SortKey> by_key(keys.size());
  COUPLER_ASSIGN_OR_RETURN(std::vector<SortedRun> runs,
                           WriteSortedRuns(context, report, inputs, keys, by_key, dir.path(),
                                           SharesOf(budget).chunk, kPositionColumn));
  if (runs.empty()) return ReduceInMemory(context, report, keep, output);  // no rows at all
  NoteSpill(context, "dedup", FileBytes(inputs), budget, runs.size(), true);
  const std::vector<std::string> by_position = {kPositionColumn};
  const std::vector<relational::SortKey> ascending(1);
  RunWriter kept_runs(dir.path() + "/kept", by_position, ascending);
  {
    COUPLER_ASSIGN_OR_RETURN(runs, MergeDown(context, report, std::move(runs), keys, by_key,
                                             dir.path(), budget));
    RunMerger merger(std::move(runs), keys, by_key, SharesOf(budget).windows, SharesOf(budget).batch);
    KeyBatches batches(merger, keys, by_key);
    std::vector<io::Table> kept;  // kept rows not yet written as a run
    uint64_t kept_bytes = 0;
    while (true) {
      if (context.Cancelled()) return Cancelled();
      COUPLER_ASSIGN_OR_RETURN(std::optional<io::Table> batch, batches.Next(report));
      if (!batch) break;
      COUPLER_ASSIGN_OR_RETURN(const std::vector<size_t> k,
                               relational::ColumnIndexes(*batch, keys, "key column"));
      // Equal keys are neighbours, in input order: a key's first row starts its run of rows,
      // its last row ends it.
      std::vector<uint32_t> picked;
      {
        KernelTimer timer(report.kernel_ms);
        const size_t n = batch->rows();
        for (size_t r = 0; r < n; ++r) {
          const bool starts = r == 0 || relational::CompareRows(*batch, k, r - 1, *batch, k, r, by_key) != 0;
          const bool ends = r + 1 == n || relational::CompareRows(*batch, k, r, *batch, k, r + 1, by_key) != 0;
          if (keep == "last" ? ends : starts) picked.push_back(static_cast<uint32_t>(r));
        }
      }
      kept.push_back(relational::TakeRows(*batch, picked));
      kept_bytes += kept.back().DataBytes();
      if (kept_bytes >= SharesOf(budget).batch) {
        COUPLER_ASSIGN_OR_RETURN(io::Table rows, relational::Concatenate(std::move(kept)));
        COUPLER_RETURN_IF_ERROR(kept_runs.Add(std::move(rows), report));
        kept.clear();
        kept_bytes = 0;
      }
    }
    if (!kept.empty()) {
      COUPLER_ASSIGN_OR_RETURN(io::Table rows, relational::Concatenate(std::move(kept)));
      COUPLER_RETURN_IF_ERROR(kept_runs.Add(std::move(rows), report));
    }
  }
  std::vector<SortedRun> kept = kept_runs.Take();
  if (kept.empty()) return InvalidArgument("a partition with rows kept none of them");  // a bug
  COUPLER_ASSIGN_OR_RETURN(kept, MergeDown(context, report, std::move(kept), by_position, ascending,
                                           dir.path() + "/kept", budget));
  RunMerger in_order(std::move(kept), by_position, ascending, SharesOf(budget).windows,
                     SharesOf(budget).batch);
  io::NpzStreamWriter writer(output);
  COUPLER_RETURN_IF_ERROR(MergeInto(context, in_order, writer, report, {kPositionColumn}));
  return FinishPartFile(writer, output, report);
}

Status RunReduce(const OpContext& context, OpReport& report) {
  COUPLER_ASSIGN_OR_RETURN(const std::string output, OutputPath(context));
  COUPLER_ASSIGN_OR_RETURN(const std::string keep, context.spec.params.Get<std::string>("keep"));
  COUPLER_ASSIGN_OR_RETURN(const uint64_t budget, ReduceBudget(context));
  if (ShouldSpill(context, report, FileBytes(context.spec.input_paths), budget)) {
    return ReduceSpilling(context, report, keep, output, budget);
  }
  return ReduceInMemory(context, report, keep, output);
}

}  // namespace

Status RunDedup(const OpContext& context, OpReport& report) {
  return RunMapOrReduce(context, report, &RunMap, &RunReduce);
}

}  // namespace coupler::worker
