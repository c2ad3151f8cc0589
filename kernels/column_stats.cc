#include "kernels/column_stats.h"

#include <algorithm>
#include <cmath>

#include "kernels/cpu/preprocess_cpu.h"
#include "kernels/cuda/batch_cuda.h"
#include "kernels/device.h"

namespace coupler::kernels {
namespace {

template <typename T>
Result<ColumnMoments> Compute(std::span<const T> column, Backend backend) {
  switch (backend) {
    case Backend::kCpu:
      return MomentsCpu(column.data(), column.size());
    case Backend::kCuda: {
      if (!BuiltWithCuda()) {
        return Unavailable("column_stats: the CUDA backend was requested but coupler was built "
                           "without CUDA (COUPLER_WITH_CUDA=OFF); use the CPU backend");
      }
      if (column.empty()) return ColumnMoments{};
      Result<ColumnMoments> moments = MomentsCuda(column.data(), column.size());
      if (!moments.ok()) return moments.status().WithContext("column_stats (cuda)");
      return moments;
    }
  }
  return InvalidArgument("column_stats: unknown backend");
}

}  // namespace

Result<ColumnMoments> ComputeMoments(std::span<const float> column, Backend backend) {
  return Compute(column, backend);
}

Result<ColumnMoments> ComputeMoments(std::span<const int32_t> column, Backend backend) {
  return Compute(column, backend);
}

Result<ColumnMoments> ComputeMoments(std::span<const int64_t> column, Backend backend) {
  if (backend == Backend::kCuda) {
    return Unavailable("column_stats: int64 columns are summarized on the CPU");
  }
  return MomentsCpu(column.data(), column.size());
}

ColumnMoments MergeMoments(const ColumnMoments& a, const ColumnMoments& b) {
  if (a.count == 0) return b;
  if (b.count == 0) return a;
  ColumnMoments m;
  m.count = a.count + b.count;
  const double na = static_cast<double>(a.count);
  const double nb = static_cast<double>(b.count);
  const double n = static_cast<double>(m.count);
  const double delta = b.mean - a.mean;
  m.mean = a.mean + delta * (nb / n);
  m.m2 = a.m2 + b.m2 + delta * delta * (na * nb / n);
  m.min = std::min(a.min, b.min);
  m.max = std::max(a.max, b.max);
  return m;
}

double PopulationStddev(const ColumnMoments& moments) {
  if (moments.count == 0) return 0;
  return std::sqrt(moments.m2 / static_cast<double>(moments.count));
}

}  // namespace coupler::kernels
