// Moments over fixed blocks: each block gets an exact two-pass mean and M2 (cheap, the block is
// in cache), then blocks merge with Chan's formula. Sixteen independent accumulators per pass
// let the compiler vectorize without reassociating a single sum (which it may not do for FP).
// NaN is a missing value (pandas' skipna): it adds nothing to count, sum or squares. A block is
// first summed as if complete (the fast loops); only when its mean or M2 comes out NaN, which a
// NaN in it guarantees, is it summed again with selects that leave missing values out, so
// complete columns keep their speed.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "kernels/column_stats.h"
#include "kernels/cpu/column_loop.h"
#include "kernels/cpu/preprocess_cpu.h"

namespace coupler::kernels {
namespace {

constexpr size_t kMomentsBlock = 2048;

// int64 columns (ids, counts) mark a missing value with the int64 minimum (io::kMissingInt64);
// it is always checked, since it does not turn the block's sums into NaN.
constexpr int64_t kMissingInt64 = std::numeric_limits<int64_t>::min();

template <bool kSkipMissing, typename T>
bool Present(T v) {
  if constexpr (kSkipMissing && std::is_floating_point_v<T>) {
    return v == v;  // false for NaN only
  } else if constexpr (std::is_same_v<T, int64_t>) {
    return v != kMissingInt64;
  } else {
    return true;
  }
}

template <bool kSkipMissing, typename T>
ColumnMoments BlockMoments(const T* x, size_t n) {
  double sum[kCpuBlock] = {};
  double present[kCpuBlock] = {};
  T lo[kCpuBlock];
  T hi[kCpuBlock];
  for (size_t j = 0; j < kCpuBlock; ++j) {
    lo[j] = std::numeric_limits<T>::has_infinity ? std::numeric_limits<T>::infinity()
                                                  : std::numeric_limits<T>::max();
    hi[j] = std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                  : std::numeric_limits<T>::lowest();
  }
  size_t i = 0;
  for (; i + kCpuBlock <= n; i += kCpuBlock) {
    for (size_t j = 0; j < kCpuBlock; ++j) {
      const T v = x[i + j];
      const bool p = Present<kSkipMissing>(v);
      sum[j] += p ? static_cast<double>(v) : 0.0;
      present[j] += p ? 1.0 : 0.0;
      lo[j] = p && v < lo[j] ? v : lo[j];  // NaN compares false: min and max skip it
      hi[j] = p && v > hi[j] ? v : hi[j];
    }
  }
  for (size_t j = 0; i < n; ++i, ++j) {
    const T v = x[i];
    const bool p = Present<kSkipMissing>(v);
    sum[j] += p ? static_cast<double>(v) : 0.0;
    present[j] += p ? 1.0 : 0.0;
    lo[j] = p && v < lo[j] ? v : lo[j];
    hi[j] = p && v > hi[j] ? v : hi[j];
  }
  ColumnMoments m;
  double total = 0;
  double count = 0;
  for (size_t j = 0; j < kCpuBlock; ++j) {
    total += sum[j];
    count += present[j];
    m.min = std::min(m.min, static_cast<double>(lo[j]));
    m.max = std::max(m.max, static_cast<double>(hi[j]));
  }
  if (count == 0) return ColumnMoments{};  // every value missing: the merge identity
  m.count = static_cast<uint64_t>(count);
  m.mean = total / count;

  double squares[kCpuBlock] = {};
  const double mean = m.mean;
  i = 0;
  for (; i + kCpuBlock <= n; i += kCpuBlock) {
    for (size_t j = 0; j < kCpuBlock; ++j) {
      const T v = x[i + j];
      const double d = Present<kSkipMissing>(v) ? static_cast<double>(v) - mean : 0.0;
      squares[j] += d * d;
    }
  }
  for (size_t j = 0; i < n; ++i, ++j) {
    const T v = x[i];
    const double d = Present<kSkipMissing>(v) ? static_cast<double>(v) - mean : 0.0;
    squares[j] += d * d;
  }
  for (size_t j = 0; j < kCpuBlock; ++j) m.m2 += squares[j];
  return m;
}

template <typename T>
ColumnMoments Moments(const T* in, size_t n) {
  ColumnMoments total;
  for (size_t start = 0; start < n; start += kMomentsBlock) {
    const size_t count = std::min(kMomentsBlock, n - start);
    ColumnMoments block = BlockMoments<false>(in + start, count);
    if constexpr (std::is_floating_point_v<T>) {
      if (block.mean != block.mean || block.m2 != block.m2) {
        block = BlockMoments<true>(in + start, count);
      }
    }
    total = MergeMoments(total, block);
  }
  return total;
}

}  // namespace

ColumnMoments MomentsCpu(const float* in, size_t n) { return Moments(in, n); }
ColumnMoments MomentsCpu(const int32_t* in, size_t n) { return Moments(in, n); }
ColumnMoments MomentsCpu(const int64_t* in, size_t n) { return Moments(in, n); }

}  // namespace coupler::kernels
