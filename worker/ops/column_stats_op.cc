// column_stats: a map task summarizes one shard into a partial stats file; the reduce task
// merges every partial (Chan et al.) into the node's stats file. Same file format for both.
#include <algorithm>

#include "kernels/column_stats.h"
#include "runtime/io/column_schema.h"
#include "worker/ops/ops.h"
#include "worker/ops/shard_io.h"
#include "worker/ops/stats_file.h"

namespace coupler::worker {
namespace {

Status RunMap(const OpContext& context, OpReport& report) {
  COUPLER_ASSIGN_OR_RETURN(const std::string input, InputPath(context, 0, "[data shard]"));
  COUPLER_ASSIGN_OR_RETURN(const std::string output, OutputPath(context));
  COUPLER_ASSIGN_OR_RETURN(const std::optional<std::vector<std::string>> columns,
                           context.spec.params.Optional<std::vector<std::string>>("columns"));
  const std::vector<std::string> names = columns.value_or(std::vector<std::string>{});
  // Only the columns it summarizes are read: never the strings, ids it skips, timestamps.
  auto summarized = [&names](const io::ColumnInfo& c) {
    if (names.empty()) return io::IsSummarizedByDefault(c.dtype, c.categorical);
    return std::find(names.begin(), names.end(), c.name) != names.end() && !c.categorical;
  };
  COUPLER_ASSIGN_OR_RETURN(const io::Table table, ReadShard(input, report, summarized));

  // Named columns may be float32, int32 or int64; by default every float32 and int64 column is
  // summarized (IsSummarizedByDefault), as pandas' describe() takes its numbers. Categorical
  // columns (a CSV's strings as int32 codes) are not numbers: never summarized.
  std::vector<size_t> selected;
  if (names.empty()) {
    for (size_t i = 0; i < table.num_columns(); ++i) {
      const io::Column& c = table.column(i);
      if (io::IsSummarizedByDefault(c.dtype(), c.categorical())) selected.push_back(i);
    }
  } else {
    for (const std::string& name : names) {
      const io::Column* column = table.Find(name);
      if (column != nullptr && column->categorical()) {
        return InvalidArgument(input + ": column '" + name +
                               "' is categorical (string codes), not a number to summarize");
      }
      const bool is_int = column != nullptr && (column->dtype() == ElementType::kInt32 ||
                                                 column->dtype() == ElementType::kInt64);
      auto one = SelectColumns(table, {name}, is_int ? column->dtype() : ElementType::kFloat32);
      if (!one.ok()) return one.status().WithContext(input);
      selected.push_back(one->front());
    }
  }
  if (selected.empty()) {
    return InvalidArgument(input + ": no float32 or int64 column to summarize (the shard has " +
                           table.Describe() + ")");
  }
  if (context.Cancelled()) return Cancelled();

  std::vector<NamedMoments> stats;
  {
    KernelTimer timer(report.kernel_ms);
    for (const size_t index : selected) {
      const io::Column& column = table.column(index);
      auto moments = RunKernel(report, [&](kernels::Backend backend) {
        switch (column.dtype()) {
          case ElementType::kInt32: return kernels::ComputeMoments(column.values<int32_t>(), backend);
          case ElementType::kInt64: return kernels::ComputeMoments(column.values<int64_t>(), backend);
          default: return kernels::ComputeMoments(column.values<float>(), backend);
        }
      });
      if (!moments.ok()) return moments.status();
      stats.push_back({column.name(), *moments});
    }
  }
  report.rows_in = table.rows();
  report.rows_out = kStatsRows;
  return WriteShard(output, StatsToTable(stats), report);
}

Status RunReduce(const OpContext& context, OpReport& report) {
  COUPLER_ASSIGN_OR_RETURN(const std::string output, OutputPath(context));
  const std::string& first = context.spec.input_paths.empty() ? "" : context.spec.input_paths[0];
  std::vector<NamedMoments> total;
  COUPLER_RETURN_IF_ERROR(ForEachPartial(
      context, report, "partial stats files",
      [&](size_t i, const std::string& path, const io::Table& table) -> Status {
        auto partial = StatsFromTable(table);
        if (!partial.ok()) return partial.status().WithContext(path);
        if (i == 0) {
          total = std::move(partial).value();
          return Status::Ok();
        }
        if (partial->size() != total.size()) {
          return InvalidArgument(path + ": has " + std::to_string(partial->size()) +
                                 " columns but " + first + " has " + std::to_string(total.size()));
        }
        KernelTimer timer(report.kernel_ms);
        for (size_t c = 0; c < total.size(); ++c) {
          if ((*partial)[c].column != total[c].column) {
            return InvalidArgument(path + ": column " + std::to_string(c) + " is '" +
                                   (*partial)[c].column + "' but in " + first + " it is '" +
                                   total[c].column + "'");
          }
          total[c].moments = kernels::MergeMoments(total[c].moments, (*partial)[c].moments);
        }
        return Status::Ok();
      }));
  report.rows_out = kStatsRows;
  return WriteShard(output, StatsToTable(total), report);
}

}  // namespace

Status RunColumnStats(const OpContext& context, OpReport& report) {
  return RunMapOrReduce(context, report, &RunMap, &RunReduce);
}

}  // namespace coupler::worker
