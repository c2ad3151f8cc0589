#include "kernels/group_fold.h"

#include <string>
#include <utility>

#include "kernels/cuda/batch_cuda.h"
#include "kernels/device.h"

namespace coupler::kernels {
namespace {

Status NoCuda() {
  return Unavailable("group_fold: the CUDA backend was requested but coupler was built without "
                     "CUDA (COUPLER_WITH_CUDA=OFF); use the CPU backend");
}

// The device numbers skipped rows as `groups` so they sort last: that must not be kMissingRow.
Status CheckGroupCount(size_t groups) {
  if (groups >= relational::kMissingRow) {
    return InvalidArgument("group_fold (cuda): " + std::to_string(groups) +
                           " groups are more than a 32-bit group id can number");
  }
  return Status::Ok();
}

}  // namespace

Status FoldMoments(std::span<const uint32_t> group, std::span<const double> x,
                   relational::GroupMoments& state, Backend backend) {
  switch (backend) {
    case Backend::kCpu:
      return relational::FoldMomentsCpu(group, x, state);  // checks its input
    case Backend::kCuda: {
      COUPLER_RETURN_IF_ERROR(relational::CheckFoldInput(group, x.size(), state.groups()));
      if (!BuiltWithCuda()) return NoCuda();
      if (x.empty() || state.groups() == 0) return Status::Ok();
      COUPLER_RETURN_IF_ERROR(CheckGroupCount(state.groups()));
      relational::GroupMoments folded = state;  // `state` changes only when the fold succeeded
      const Status status = FoldMomentsCuda(group.data(), x.data(), x.size(), folded.groups(),
                                            folded.n.data(), folded.sum.data(),
                                            folded.mean.data(), folded.m2.data());
      if (!status.ok()) return status.WithContext("group_fold (cuda)");
      state = std::move(folded);
      return Status::Ok();
    }
  }
  return InvalidArgument("group_fold: unknown backend");
}

Status FoldSums(std::span<const uint32_t> group, std::span<const int64_t> x,
                relational::GroupSums& state, Backend backend) {
  switch (backend) {
    case Backend::kCpu:
      return relational::FoldSumsCpu(group, x, state);  // checks its input
    case Backend::kCuda: {
      COUPLER_RETURN_IF_ERROR(relational::CheckFoldInput(group, x.size(), state.groups()));
      if (!BuiltWithCuda()) return NoCuda();
      if (x.empty() || state.groups() == 0) return Status::Ok();
      COUPLER_RETURN_IF_ERROR(CheckGroupCount(state.groups()));
      relational::GroupSums folded = state;
      const Status status = FoldSumsCuda(group.data(), x.data(), x.size(), folded.groups(),
                                         folded.n.data(), folded.sum.data());
      if (!status.ok()) return status.WithContext("group_fold (cuda)");
      state = std::move(folded);
      return Status::Ok();
    }
  }
  return InvalidArgument("group_fold: unknown backend");
}

}  // namespace coupler::kernels
