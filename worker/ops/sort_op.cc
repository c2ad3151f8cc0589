// sort: pandas' sort_values(by, ascending, na_position, kind="stable") across the whole dataset,
// through a shuffle by ranges of the keys. Each map task sorts its shard (stably) and writes it
// with a sample of its keys; each reduce task reads every sample, derives the same P - 1 bounds
// from them (weighted quantiles, so partitions hold about equal rows), takes the rows of its
// range from every sorted shard (reading the key columns whole and the others only in the range)
// and merges them (past the reduce's memory budget, a window of rows per map task at a time,
// reduce_spill.h). Part file r holds the r-th range: read in order, the part files are one
// sorted table. Equal keys keep their input order.
#include <algorithm>
#include <numeric>

#include "runtime/io/npz_stream_writer.h"
#include "runtime/io/output_layout.h"
#include "runtime/ops/op_def.h"
#include "runtime/relational/table_rows.h"
#include "worker/ops/ops.h"
#include "worker/ops/reduce_spill.h"
#include "worker/ops/shard_io.h"
#include "worker/ops/shuffle_files.h"

namespace coupler::worker {
namespace {

constexpr char kWeight[] = "__rows";  // how many rows of its shard a sample row stands for
constexpr size_t kSamplesPerPartition = 64;

struct SortSpec {
  std::vector<std::string> by;
  std::vector<relational::SortKey> keys;
};

Result<SortSpec> Spec(const OpContext& context) {
  const wire::TaskParams& params = context.spec.params;
  SortSpec spec;
  COUPLER_ASSIGN_OR_RETURN(spec.by, params.Get<std::vector<std::string>>("by"));
  if (spec.by.empty()) return InvalidArgument("sort needs at least one column in `by`");
  COUPLER_ASSIGN_OR_RETURN(const std::optional<std::vector<std::string>> descending,
                           params.Optional<std::vector<std::string>>("descending"));
  COUPLER_ASSIGN_OR_RETURN(const std::string na_position, params.Get<std::string>("na_position"));
  for (const std::string& column : spec.by) {
    relational::SortKey key;
    key.descending = descending && std::find(descending->begin(), descending->end(), column) !=
                                       descending->end();
    key.missing_first = na_position == "first";
    spec.keys.push_back(key);
  }
  return spec;
}

// The sort columns' indexes, an error naming the file that lacks one.
Result<std::vector<size_t>> ColumnIndexes(const io::Table& table, const std::vector<std::string>& by,
                                          std::string_view where) {
  auto indexes = relational::ColumnIndexes(table, by, "column to sort by");
  if (!indexes.ok()) return indexes.status().WithContext(std::string(where));
  return indexes;
}

Status RunMap(const OpContext& context, OpReport& report) {
  COUPLER_ASSIGN_OR_RETURN(const std::string input, InputPath(context, 0, "[data shard]"));
  COUPLER_ASSIGN_OR_RETURN(const std::string prefix, OutputPath(context));
  COUPLER_ASSIGN_OR_RETURN(const SortSpec spec, Spec(context));
  COUPLER_ASSIGN_OR_RETURN(const int64_t partitions,
                           context.spec.params.Get<int64_t>(std::string(ops::kPartitionsParam)));
  COUPLER_ASSIGN_OR_RETURN(io::Table table, ReadShard(input, report));
  report.rows_in = table.rows();
  COUPLER_ASSIGN_OR_RETURN(const std::vector<size_t> k, ColumnIndexes(table, spec.by, input));
  io::Table sorted;
  {
    KernelTimer timer(report.kernel_ms);
    sorted = relational::TakeRows(table, relational::StableOrder(table, k, spec.keys));
  }
  // Evenly spaced rows of the sorted shard, each standing for the rows up to the next one.
  const size_t n = sorted.rows();
  const size_t samples = std::min(n, kSamplesPerPartition * static_cast<size_t>(partitions));
  std::vector<uint32_t> picked(samples);
  std::vector<double> weight(samples, samples > 0 ? static_cast<double>(n) / static_cast<double>(samples) : 0);
  for (size_t j = 0; j < samples; ++j) picked[j] = static_cast<uint32_t>(j * n / samples);
  io::Table sample;
  for (const size_t key : k) {
    COUPLER_RETURN_IF_ERROR(sample.AddColumn(relational::TakeColumnRows(sorted.column(key), picked)));
  }
  COUPLER_RETURN_IF_ERROR(sample.AddColumn(io::Column::Float64(kWeight, std::move(weight))));
  report.rows_out = n;
  COUPLER_RETURN_IF_ERROR(WriteShard(io::ShuffleSortedPath(prefix), std::move(sorted), report));
  return WriteShard(io::ShuffleSamplePath(prefix), std::move(sample), report);
}

// The first row of `t` (sorted) not before row `bound` of `bounds`.
size_t LowerBound(const io::Table& t, const std::vector<size_t>& k, const io::Table& bounds,
                  const std::vector<size_t>& bk, size_t bound,
                  const std::vector<relational::SortKey>& keys) {
  size_t lo = 0, hi = t.rows();
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (relational::CompareRows(t, k, mid, bounds, bk, bound, keys) < 0) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

Status RunReduce(const OpContext& context, OpReport& report) {
  COUPLER_ASSIGN_OR_RETURN(const std::string output, OutputPath(context));
  COUPLER_ASSIGN_OR_RETURN(const SortSpec spec, Spec(context));
  COUPLER_ASSIGN_OR_RETURN(const int64_t partitions,
                           context.spec.params.Get<int64_t>(std::string(ops::kPartitionsParam)));
  const int64_t r = context.spec.shard_index;
  const auto& inputs = context.spec.input_paths;
  if (inputs.empty() || inputs.size() % 2 != 0 || r < 0 || r >= partitions) {
    return InvalidArgument("a sort's reduce reads each map task's sorted shard and sample");
  }
  const size_t maps = inputs.size() / 2;
  // The bounds, the same in every reduce task: the samples sorted, cut at equal weights.
  std::vector<io::Table> samples;
  for (size_t m = 0; m < maps; ++m) {
    COUPLER_ASSIGN_OR_RETURN(io::Table sample, ReadShard(inputs[maps + m], report));
    samples.push_back(std::move(sample));
  }
  COUPLER_ASSIGN_OR_RETURN(const io::Table all_samples, relational::Concatenate(std::move(samples)));
  std::vector<size_t> sk(spec.by.size());
  std::iota(sk.begin(), sk.end(), size_t{0});
  const std::vector<uint32_t> order = relational::StableOrder(all_samples, sk, spec.keys);
  const io::Column* weights = all_samples.Find(kWeight);
  if (weights == nullptr) return InvalidArgument("a sort sample without its weights");
  double total = 0;
  for (const double w : weights->values<double>()) total += w;
  // bound[j] (j = 1..P-1): the sample row where partition j starts.
  std::vector<size_t> bound(static_cast<size_t>(partitions) + 1, SIZE_MAX);
  {
    double seen = 0;
    size_t j = 1;
    for (size_t i = 0; i < order.size() && j < bound.size() - 1; ++i) {
      while (j < bound.size() - 1 && seen >= total * static_cast<double>(j) / static_cast<double>(partitions)) {
        bound[j++] = order[i];
      }
      seen += weights->values<double>()[order[i]];
    }
  }
  // Each map task's rows of this range: only the keys are read whole (to find it), then let go.
  auto is_key = [&spec](const io::ColumnInfo& c) {
    return std::find(spec.by.begin(), spec.by.end(), c.name) != spec.by.end();
  };
  auto no_column = [](const io::ColumnInfo&) { return false; };
  std::vector<SortedRun> runs;
  uint64_t range_bytes = 0;
  for (size_t m = 0; m < maps; ++m) {
    if (context.Cancelled()) return Cancelled();
    size_t lo = 0, end = 0;
    {
      COUPLER_ASSIGN_OR_RETURN(const io::Table keys, ReadShard(inputs[m], report, is_key));
      COUPLER_ASSIGN_OR_RETURN(const std::vector<size_t> k, ColumnIndexes(keys, spec.by, inputs[m]));
      const auto at = [&](size_t j) {
        if (j == 0) return size_t{0};
        if (bound[j] == SIZE_MAX) return keys.rows();  // no sample past this bound: empty beyond
        return LowerBound(keys, k, all_samples, sk, bound[j], spec.keys);
      };
      lo = at(static_cast<size_t>(r));
      const size_t hi = static_cast<size_t>(r) + 1 == static_cast<size_t>(partitions)
                            ? keys.rows()
                            : at(static_cast<size_t>(r) + 1);
      end = std::max(lo, hi);
    }
    COUPLER_ASSIGN_OR_RETURN(const io::Table stored, ReadShard(inputs[m], report, no_column));
    range_bytes += (end - lo) * stored.RowBytes();
    runs.push_back(SortedRun{inputs[m], lo, end});
  }
  COUPLER_ASSIGN_OR_RETURN(const uint64_t budget, ReduceBudget(context));
  if (ShouldSpill(context, report, range_bytes, budget)) {
    // Past the budget: the ranges are sorted runs already; merged a window at a time, in map
    // order on ties (input order), straight into the part file (in passes when there are more
    // map tasks than one merge reads at once).
    NoteSpill(context, "sort", range_bytes, budget, runs.size(), false);
    std::optional<SpillDir> dir;
    if (runs.size() > kMaxMergeWidth) {
      COUPLER_ASSIGN_OR_RETURN(SpillDir created, SpillDir::Create(output));
      dir.emplace(std::move(created));
      COUPLER_ASSIGN_OR_RETURN(runs, MergeDown(context, report, std::move(runs), spec.by, spec.keys,
                                               dir->path(), budget));
    }
    RunMerger merger(std::move(runs), spec.by, spec.keys, SharesOf(budget).windows,
                     SharesOf(budget).batch);
    io::NpzStreamWriter writer(output);
    COUPLER_RETURN_IF_ERROR(MergeInto(context, merger, writer, report));
    report.rows_in += writer.rows();  // every row of the ranges, once
    return FinishPartFile(writer, output, report);
  }
  std::vector<io::Table> pieces;
  for (const SortedRun& run : runs) {
    COUPLER_ASSIGN_OR_RETURN(const io::Table stored, ReadShard(run.path, report, no_column));
    COUPLER_ASSIGN_OR_RETURN(io::Table piece, ReadRowRange(stored, run.begin, run.end, report));
    report.rows_in += piece.rows();
    pieces.push_back(std::move(piece));
  }
  runs.clear();
  COUPLER_ASSIGN_OR_RETURN(io::Table merged, relational::Concatenate(std::move(pieces)));
  COUPLER_ASSIGN_OR_RETURN(const std::vector<size_t> k, ColumnIndexes(merged, spec.by, output));
  io::Table out;
  {
    KernelTimer timer(report.kernel_ms);
    // Stable: equal keys stay in map order, which is input order.
    out = relational::TakeRows(merged, relational::StableOrder(merged, k, spec.keys));
  }
  report.rows_out = out.rows();
  return WriteShard(output, std::move(out), report);
}

}  // namespace

Status RunSort(const OpContext& context, OpReport& report) {
  return RunMapOrReduce(context, report, &RunMap, &RunReduce);
}

}  // namespace coupler::worker
