// The arithmetic core of group_by: every present value of one column folded into its group's
// running state, in row order — count, sum, mean and M2 for the floating aggregates (count,
// sum, mean, var, std), count and an exact wrapping sum for integer sums. The CPU loops are
// here; a worker with a GPU passes its CUDA twins (kernels/group_fold.h) through GroupFold, and
// both give the same bits (runtime/relational/shuffle_math.h). Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "runtime/io/table.h"
#include "runtime/relational/table_rows.h"
#include "runtime/status.h"

namespace coupler::relational {

// Per group: how many values, their sum, and Welford's mean and M2.
struct GroupMoments {
  explicit GroupMoments(size_t groups = 0)
      : n(groups, 0), sum(groups, 0.0), mean(groups, 0.0), m2(groups, 0.0) {}
  size_t groups() const { return n.size(); }
  std::vector<int64_t> n;
  std::vector<double> sum, mean, m2;
};

// Per group: how many values and their exact int64 sum (wrapping as numpy's does).
struct GroupSums {
  explicit GroupSums(size_t groups = 0) : n(groups, 0), sum(groups, 0) {}
  size_t groups() const { return n.size(); }
  std::vector<int64_t> n, sum;
};

// x[r] folded into state[group[r]], rows in order; a row whose group is kMissingRow is skipped
// (its key or its value is missing). The state accumulates, so a caller may fold in pieces.
// InvalidArgument when the lengths differ or a group is out of range, before any state changes.
Status FoldMomentsCpu(std::span<const uint32_t> group, std::span<const double> x, GroupMoments& state);
Status FoldSumsCpu(std::span<const uint32_t> group, std::span<const int64_t> x, GroupSums& state);

// The checks both twins of a fold make first (see FoldMomentsCpu).
Status CheckFoldInput(std::span<const uint32_t> group, size_t values, size_t groups);

// Where group_by's folds run: the CPU loops unless a caller hands in other twins of them.
struct GroupFold {
  std::function<Status(std::span<const uint32_t>, std::span<const double>, GroupMoments&)> moments =
      FoldMomentsCpu;
  std::function<Status(std::span<const uint32_t>, std::span<const int64_t>, GroupSums&)> sums =
      FoldSumsCpu;
};

// Each row's group in `g`, or kMissingRow where `column`'s value is missing: the rows an
// aggregate of the column folds.
std::vector<uint32_t> PresentGroups(const io::Column& column, const RowGroups& g);

// The column's values as the folds take them: doubles (an int64 exactly as numpy would
// convert it), or int64 for an integer sum. Missing values come out as whatever they hold;
// PresentGroups skips them.
std::vector<double> ValuesAsDouble(const io::Column& column);
std::vector<int64_t> ValuesAsInt64(const io::Column& column);

}  // namespace coupler::relational
