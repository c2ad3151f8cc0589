#include "worker/ops/stats_file.h"

#include <cmath>

namespace coupler::worker {

io::Table StatsToTable(const std::vector<NamedMoments>& stats) {
  io::Table table;
  for (const NamedMoments& s : stats) {
    const kernels::ColumnMoments& m = s.moments;
    // Names are unique (they come from a table's columns), so AddColumn cannot fail.
    COUPLER_CHECK_OK(table.AddColumn(io::Column::Float64(
        s.column, {static_cast<double>(m.count), m.mean, m.m2, m.min, m.max})));
  }
  return table;
}

Result<std::vector<NamedMoments>> StatsFromTable(const io::Table& table) {
  if (table.num_columns() == 0 || table.rows() != kStatsRows) {
    return InvalidArgument("not a column_stats file: expected " + std::to_string(kStatsRows) +
                           " rows (count, mean, m2, min, max), found " +
                           std::to_string(table.rows()) + " rows of " + table.Describe());
  }
  std::vector<NamedMoments> stats;
  for (const io::Column& column : table.columns()) {
    if (column.dtype() != ElementType::kFloat64) {
      return InvalidArgument("not a column_stats file: column '" + column.name() + "' is " +
                             std::string(ElementTypeName(column.dtype())) + ", expected float64");
    }
    const auto v = column.values<double>();
    if (!(v[0] >= 0) || v[0] != std::floor(v[0]) || v[0] > 0x1p53) {
      return InvalidArgument("not a column_stats file: column '" + column.name() +
                             "' has count " + std::to_string(v[0]));
    }
    kernels::ColumnMoments m;
    m.count = static_cast<uint64_t>(v[0]);
    m.mean = v[1];
    m.m2 = v[2];
    m.min = v[3];
    m.max = v[4];
    stats.push_back({column.name(), m});
  }
  return stats;
}

}  // namespace coupler::worker
