// column_stats: a map task summarizes one shard into a partial stats file; the reduce task
// merges every partial (Chan et al.) into the node's stats file. Same file format for both.
#include "kernels/column_stats.h"
#include "worker/ops/ops.h"
#include "worker/ops/shard_io.h"
#include "worker/ops/stats_file.h"
#include "worker/ops/task_params.h"

namespace coupler::worker {
namespace {

Status RunMap(const OpContext& context, OpReport& report) {
  COUPLER_ASSIGN_OR_RETURN(const std::string input, InputPath(context, 0, "[data shard]"));
  COUPLER_ASSIGN_OR_RETURN(const std::string output, OutputPath(context));
  COUPLER_ASSIGN_OR_RETURN(const io::Table table, ReadShard(input, report));
  const std::vector<std::string> names = TaskParams(context.spec.params).List("columns");

  // Named columns may be float32 or int32; by default every float32 column is summarized.
  std::vector<size_t> selected;
  if (names.empty()) {
    COUPLER_ASSIGN_OR_RETURN(selected, SelectColumns(table, {}, io::DType::kFloat32));
  } else {
    for (const std::string& name : names) {
      const io::Column* column = table.Find(name);
      const bool is_int = column != nullptr && column->dtype() == io::DType::kInt32;
      auto one = SelectColumns(table, {name}, is_int ? io::DType::kInt32 : io::DType::kFloat32);
      if (!one.ok()) return one.status().WithContext(input);
      selected.push_back(one->front());
    }
  }
  if (selected.empty()) {
    return InvalidArgument(input + ": no float32 column to summarize (the shard has " +
                           table.Describe() + ")");
  }
  if (context.Cancelled()) return Cancelled();

  std::vector<NamedMoments> stats;
  {
    KernelTimer timer(report.kernel_ms);
    for (const size_t index : selected) {
      const io::Column& column = table.column(index);
      auto moments = RunKernel(report, [&](kernels::Backend backend) {
        return column.dtype() == io::DType::kInt32
                   ? kernels::ComputeMoments(column.values<int32_t>(), backend)
                   : kernels::ComputeMoments(column.values<float>(), backend);
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
  const auto& inputs = context.spec.input_paths;
  if (inputs.empty()) return InvalidArgument("the reduce task has no partial stats files");
  COUPLER_ASSIGN_OR_RETURN(const std::string output, OutputPath(context));

  std::vector<NamedMoments> total;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string& path = inputs[i];
    if (context.Cancelled()) return Cancelled();
    COUPLER_ASSIGN_OR_RETURN(const io::Table table, ReadShard(path, report));
    auto partial = StatsFromTable(table);
    if (!partial.ok()) return partial.status().WithContext(path);
    report.rows_in += table.rows();
    if (i == 0) {
      total = std::move(partial).value();
      continue;
    }
    if (partial->size() != total.size()) {
      return InvalidArgument(path + ": has " + std::to_string(partial->size()) +
                             " columns but " + inputs.front() + " has " +
                             std::to_string(total.size()));
    }
    KernelTimer timer(report.kernel_ms);
    for (size_t c = 0; c < total.size(); ++c) {
      if ((*partial)[c].column != total[c].column) {
        return InvalidArgument(path + ": column " + std::to_string(c) + " is '" +
                               (*partial)[c].column + "' but in " + inputs.front() + " it is '" +
                               total[c].column + "'");
      }
      total[c].moments = kernels::MergeMoments(total[c].moments, (*partial)[c].moments);
    }
  }
  report.rows_out = kStatsRows;
  return WriteShard(output, StatsToTable(total), report);
}

}  // namespace

Status RunColumnStats(const OpContext& context, OpReport& report) {
  // __kind is what the coordinator sends; without it, a task with no shard is the reduce.
  const std::string kind = TaskParams(context.spec.params)
                               .StringOr("__kind", context.spec.shard_index < 0 ? "reduce" : "map");
  if (kind == "map") return RunMap(context, report);
  if (kind == "reduce") return RunReduce(context, report);
  return InvalidArgument("param '__kind' is '" + kind + "', expected map or reduce");
}

}  // namespace coupler::worker
