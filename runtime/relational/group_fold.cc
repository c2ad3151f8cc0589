#include "runtime/relational/group_fold.h"

#include <string>
#include <type_traits>

#include "runtime/relational/shuffle_math.h"

namespace coupler::relational {

Status CheckFoldInput(std::span<const uint32_t> group, size_t values, size_t groups) {
  if (group.size() != values) {
    return InvalidArgument("group fold: " + std::to_string(group.size()) + " group ids for " +
                           std::to_string(values) + " values");
  }
  for (size_t r = 0; r < group.size(); ++r) {
    if (group[r] != kMissingRow && group[r] >= groups) {
      return InvalidArgument("group fold: row " + std::to_string(r) + " names group " +
                             std::to_string(group[r]) + " of " + std::to_string(groups));
    }
  }
  return Status::Ok();
}

Status FoldMomentsCpu(std::span<const uint32_t> group, std::span<const double> x, GroupMoments& state) {
  COUPLER_RETURN_IF_ERROR(CheckFoldInput(group, x.size(), state.groups()));
  for (size_t r = 0; r < x.size(); ++r) {
    const uint32_t k = group[r];
    if (k == kMissingRow) continue;
    FoldMoment(state.n[k], state.sum[k], state.mean[k], state.m2[k], x[r]);
  }
  return Status::Ok();
}

Status FoldSumsCpu(std::span<const uint32_t> group, std::span<const int64_t> x, GroupSums& state) {
  COUPLER_RETURN_IF_ERROR(CheckFoldInput(group, x.size(), state.groups()));
  for (size_t r = 0; r < x.size(); ++r) {
    const uint32_t k = group[r];
    if (k != kMissingRow) FoldSum(state.n[k], state.sum[k], x[r]);
  }
  return Status::Ok();
}

std::vector<uint32_t> PresentGroups(const io::Column& column, const RowGroups& g) {
  std::vector<uint32_t> group(g.of_row);
  for (size_t r = 0; r < group.size(); ++r) {
    if (group[r] != kMissingRow && IsMissing(column, r)) group[r] = kMissingRow;
  }
  return group;
}

std::vector<double> ValuesAsDouble(const io::Column& column) {
  return VisitValues(column, [](auto in) {
    using T = std::remove_const_t<typename decltype(in)::element_type>;
    std::vector<double> out(in.size());
    for (size_t r = 0; r < in.size(); ++r) {
      if constexpr (std::is_same_v<T, int64_t>) {
        out[r] = io::Int64AsDouble(in[r]);
      } else {
        out[r] = static_cast<double>(in[r]);
      }
    }
    return out;
  });
}

std::vector<int64_t> ValuesAsInt64(const io::Column& column) {
  return VisitValues(column, [](auto in) {
    std::vector<int64_t> out(in.size());
    for (size_t r = 0; r < in.size(); ++r) out[r] = static_cast<int64_t>(in[r]);
    return out;
  });
}

}  // namespace coupler::relational
