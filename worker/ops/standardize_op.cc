// standardize: inputs [data shard, stats file]; each selected float32 or int64 column becomes
// (x - mean) / stddev with the population stddev of the reduced stats, as float32 (an int64
// column's missing values become NaN). Other columns pass through unchanged.
#include "kernels/standardize.h"
#include "worker/ops/ops.h"
#include "worker/ops/shard_io.h"
#include "worker/ops/stats_file.h"

namespace coupler::worker {

Status RunStandardize(const OpContext& context, OpReport& report) {
  COUPLER_ASSIGN_OR_RETURN(const std::string data_path,
                           InputPath(context, 0, "[data shard, stats file]"));
  COUPLER_ASSIGN_OR_RETURN(const std::string stats_path,
                           InputPath(context, 1, "[data shard, stats file]"));
  COUPLER_ASSIGN_OR_RETURN(const std::string output, OutputPath(context));
  COUPLER_ASSIGN_OR_RETURN(const io::Table stats_table, ReadShard(stats_path, report));
  auto stats = StatsFromTable(stats_table);
  if (!stats.ok()) return stats.status().WithContext(stats_path);
  COUPLER_ASSIGN_OR_RETURN(const std::optional<std::vector<std::string>> columns,
                           context.spec.params.Optional<std::vector<std::string>>("columns"));
  std::vector<std::string> names = columns.value_or(std::vector<std::string>{});
  if (names.empty()) {
    for (const NamedMoments& s : *stats) names.push_back(s.column);
  }
  // Only the columns it scales are read; the rest go to the output as they are on disk.
  COUPLER_ASSIGN_OR_RETURN(io::Table table,
                           ReadShard(data_path, report, NamedOrOfType(names, ElementType::kFloat32)));
  // int64 features (counts, ids a user chose to scale) turn into float32 first.
  WidenInt64ToFloat32(table, names);
  auto selected = SelectColumns(table, names, ElementType::kFloat32);
  if (!selected.ok()) return selected.status().WithContext(data_path);
  std::vector<const kernels::ColumnMoments*> moments;
  for (const std::string& name : names) {
    const kernels::ColumnMoments* found = nullptr;
    for (const NamedMoments& s : *stats) {
      if (s.column == name) found = &s.moments;
    }
    if (found == nullptr) {
      return InvalidArgument(stats_path + ": has no stats for column '" + name + "'");
    }
    moments.push_back(found);
  }
  if (context.Cancelled()) return Cancelled();

  {
    KernelTimer timer(report.kernel_ms);
    for (size_t i = 0; i < selected->size(); ++i) {
      const std::span<float> column = table.column((*selected)[i]).values<float>();
      const double mean = moments[i]->mean;
      const double stddev = kernels::PopulationStddev(*moments[i]);
      COUPLER_RETURN_IF_ERROR(RunKernel(report, [&](kernels::Backend backend) {
        return kernels::Standardize(column, column, mean, stddev, backend);
      }));
    }
  }
  report.rows_in = report.rows_out = table.rows();
  return WriteShard(output, std::move(table), report);
}

}  // namespace coupler::worker
