// group_by: a shuffle. Each map task reads the key and aggregated columns of its shard, drops
// the rows whose key is missing (pandas' dropna=True, unless `dropna: false`), folds the rest
// into one row of partial state per key (partial_aggregate.h; with nunique, which does not
// fold, the rows themselves travel) and routes them to their partition's shuffle file; each
// reduce task merges its partition's states and writes one part file: the keys, sorted, then
// the aggregates in the order the spec lists them. A partition past the reduce's memory budget
// is merged from sorted runs instead (reduce_spill.h), into the same part file.
#include <algorithm>

#include "kernels/group_fold.h"
#include "runtime/io/npz_stream_writer.h"
#include "runtime/ops/op_def.h"
#include "runtime/relational/group_aggregate.h"
#include "runtime/relational/partial_aggregate.h"
#include "runtime/relational/table_rows.h"
#include "worker/ops/ops.h"
#include "worker/ops/reduce_spill.h"
#include "worker/ops/shard_io.h"
#include "worker/ops/shuffle_files.h"

namespace coupler::worker {
namespace {

Result<relational::GroupByOptions> Options(const OpContext& context) {
  const wire::TaskParams& params = context.spec.params;
  relational::GroupByOptions options;
  COUPLER_ASSIGN_OR_RETURN(options.keys, params.Get<std::vector<std::string>>("keys"));
  if (options.keys.empty()) return InvalidArgument("group_by needs at least one key column");
  COUPLER_ASSIGN_OR_RETURN(const job::ParamMap aggregates, params.Get<job::ParamMap>("aggregates"));
  for (const job::ParamEntry& entry : aggregates) {
    COUPLER_ASSIGN_OR_RETURN(relational::AggregateSpec spec,
                             relational::ParseAggregate(entry.key, entry.value));
    options.aggregates.push_back(std::move(spec));
  }
  COUPLER_ASSIGN_OR_RETURN(options.drop_missing_keys, params.Get<bool>("dropna"));
  return options;
}

// The folds on the task's backend: the CUDA twins where it placed the task on a GPU (falling
// back to the CPU as RunKernel does), else the CPU loops.
relational::GroupFold Fold(OpReport& report) {
  return kernels::GroupFoldOn([&report](auto&& kernel) { return RunKernel(report, kernel); });
}

Status RunMap(const OpContext& context, OpReport& report) {
  COUPLER_ASSIGN_OR_RETURN(const std::string input, InputPath(context, 0, "[data shard]"));
  COUPLER_ASSIGN_OR_RETURN(const relational::GroupByOptions options, Options(context));
  COUPLER_ASSIGN_OR_RETURN(const int64_t partitions,
                           context.spec.params.Get<int64_t>(std::string(ops::kPartitionsParam)));
  const std::vector<std::string> names = relational::GroupByColumns(options);
  auto wanted = [&names](const io::ColumnInfo& c) {
    return std::find(names.begin(), names.end(), c.name) != names.end();
  };
  COUPLER_ASSIGN_OR_RETURN(io::Table shard, ReadShard(input, report, wanted));
  report.rows_in = shard.rows();
  COUPLER_ASSIGN_OR_RETURN(io::Table table, Project(std::move(shard), names, input));
  if (relational::CanCombine(options)) {
    // One row of partial state per key instead of every row (the combiner).
    Result<io::Table> partials = [&] {
      KernelTimer timer(report.kernel_ms);
      return relational::PartialAggregate(table, options, Fold(report));
    }();
    if (!partials.ok()) return partials.status().WithContext(input);
    return WriteRuns(context, std::move(partials).value(), options.keys, partitions, report);
  }
  if (options.drop_missing_keys) {
    std::vector<size_t> keys(options.keys.size());
    for (size_t k = 0; k < keys.size(); ++k) keys[k] = k;  // Project put the keys first
    std::vector<uint32_t> kept;
    kept.reserve(table.rows());
    for (size_t r = 0; r < table.rows(); ++r) {
      if (!relational::AnyKeyMissing(table, keys, r)) kept.push_back(static_cast<uint32_t>(r));
    }
    if (kept.size() != table.rows()) table = relational::TakeRows(table, kept);
  }
  return WriteRuns(context, std::move(table), options.keys, partitions, report);
}

// The groups of rows merged in key order (equal keys in input order): a batch ends where a key
// does, so no group is split between two batches and the batches' groups come out in order.
Result<io::Table> Groups(const io::Table& rows, const relational::GroupByOptions& options,
                         OpReport& report) {
  KernelTimer timer(report.kernel_ms);
  return relational::CanCombine(options) ? relational::MergePartials(rows, options)
                                         : relational::GroupAggregate(rows, options, Fold(report));
}

Status ReduceInMemory(const OpContext& context, OpReport& report,
                      const relational::GroupByOptions& options, const std::string& output) {
  COUPLER_ASSIGN_OR_RETURN(const io::Table rows, ReadPartition(context, report));
  if (context.Cancelled()) return Cancelled();
  Result<io::Table> groups = Groups(rows, options, report);
  if (!groups.ok()) return groups.status().WithContext(output);
  report.rows_out = groups->rows();
  return WriteShard(output, std::move(groups).value(), report);
}

// Past the budget: sorted runs of the partition, merged (reduce_spill.h).
Status ReduceSpilling(const OpContext& context, OpReport& report,
                      const relational::GroupByOptions& options, const std::string& output,
                      uint64_t budget) {
  COUPLER_ASSIGN_OR_RETURN(const SpillDir dir, SpillDir::Create(output));
  // Missing keys sort last, where GroupAggregate puts their groups.
  const std::vector<relational::SortKey> order(options.keys.size());
  COUPLER_ASSIGN_OR_RETURN(std::vector<SortedRun> runs,
                           WriteSortedRuns(context, report, context.spec.input_paths, options.keys,
                                           order, dir.path(), SharesOf(budget).chunk));
  if (runs.empty()) return ReduceInMemory(context, report, options, output);  // no rows at all
  NoteSpill(context, "group_by", FileBytes(context.spec.input_paths), budget, runs.size(), true);
  COUPLER_ASSIGN_OR_RETURN(runs, MergeDown(context, report, std::move(runs), options.keys, order,
                                           dir.path(), budget));
  RunMerger merger(std::move(runs), options.keys, order, SharesOf(budget).windows,
                   SharesOf(budget).batch);
  io::NpzStreamWriter writer(output);
  KeyBatches batches(merger, options.keys, order);
  while (true) {
    if (context.Cancelled()) return Cancelled();
    COUPLER_ASSIGN_OR_RETURN(std::optional<io::Table> batch, batches.Next(report));
    if (!batch) break;
    Result<io::Table> groups = Groups(*batch, options, report);
    if (!groups.ok()) return groups.status().WithContext(output);
    COUPLER_RETURN_IF_ERROR(writer.Append(*groups));
  }
  return FinishPartFile(writer, output, report);
}

Status RunReduce(const OpContext& context, OpReport& report) {
  COUPLER_ASSIGN_OR_RETURN(const std::string output, OutputPath(context));
  COUPLER_ASSIGN_OR_RETURN(const relational::GroupByOptions options, Options(context));
  COUPLER_ASSIGN_OR_RETURN(const uint64_t budget, ReduceBudget(context));
  if (ShouldSpill(context, report, FileBytes(context.spec.input_paths), budget)) {
    return ReduceSpilling(context, report, options, output, budget);
  }
  return ReduceInMemory(context, report, options, output);
}

}  // namespace

Status RunGroupBy(const OpContext& context, OpReport& report) {
  return RunMapOrReduce(context, report, &RunMap, &RunReduce);
}

}  // namespace coupler::worker
