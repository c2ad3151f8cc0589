// The column_stats file: a structured .npy with one <f8 field per summarized column and five
// rows in the order count, mean, m2, min, max. Partials (one per shard) and the reduced file
// share the format, so numpy users read either with np.load(path)['col'].
#pragma once

#include <string>
#include <vector>

#include "kernels/column_stats.h"
#include "runtime/io/table.h"
#include "runtime/status.h"

namespace coupler::worker {

inline constexpr size_t kStatsRows = 5;  // count, mean, m2, min, max

struct NamedMoments {
  std::string column;
  kernels::ColumnMoments moments;
};

io::Table StatsToTable(const std::vector<NamedMoments>& stats);

// Validates the shape (5 rows, float64 fields) and that each count is a whole number >= 0.
Result<std::vector<NamedMoments>> StatsFromTable(const io::Table& table);

}  // namespace coupler::worker
