#include "kernels/filter_map.h"

#include <cmath>
#include <limits>

#include "kernels/column_checks.h"
#include "kernels/cpu/preprocess_cpu.h"
#include "kernels/cuda/batch_cuda.h"
#include "kernels/device.h"

namespace coupler::kernels {

float FloatThresholdFor(double threshold) {
  constexpr double kMax = std::numeric_limits<float>::max();
  constexpr float kInf = std::numeric_limits<float>::infinity();
  if (std::isnan(threshold)) return std::numeric_limits<float>::quiet_NaN();
  // Above FLT_MAX only inf exceeds the threshold, and nothing exceeds +inf.
  if (threshold > kMax) return std::isinf(threshold) ? kInf : static_cast<float>(kMax);
  if (threshold < -kMax) return -kInf;  // every float above it is >= -FLT_MAX, i.e. > -inf
  // Round down to a float: no float lies strictly between it and the threshold, so a float is
  // above one exactly when it is above the other.
  float t = static_cast<float>(threshold);
  if (static_cast<double>(t) > threshold) t = std::nextafter(t, -kInf);
  return t;
}

Result<size_t> FilterMap(std::span<const float> a, std::span<const float> b, double threshold,
                         std::span<uint8_t> keep, std::span<float> value, Backend backend) {
  COUPLER_RETURN_IF_ERROR(CheckSameLength("filter_map (b)", a.size(), b.size()));
  COUPLER_RETURN_IF_ERROR(CheckSameLength("filter_map (keep)", a.size(), keep.size()));
  COUPLER_RETURN_IF_ERROR(CheckSameLength("filter_map (value)", a.size(), value.size()));
  if (Overlaps(a.data(), a.size_bytes(), value.data(), value.size_bytes()) ||
      Overlaps(b.data(), b.size_bytes(), value.data(), value.size_bytes()) ||
      Overlaps(keep.data(), keep.size_bytes(), value.data(), value.size_bytes())) {
    return InvalidArgument("filter_map: the value column overlaps an input; use a new column");
  }
  const float t = FloatThresholdFor(threshold);
  switch (backend) {
    case Backend::kCpu:
      return FilterMapCpu(a.data(), b.data(), a.size(), t, keep.data(), value.data());
    case Backend::kCuda: {
      if (!BuiltWithCuda()) {
        return Unavailable("filter_map: the CUDA backend was requested but coupler was built "
                           "without CUDA (COUPLER_WITH_CUDA=OFF); use the CPU backend");
      }
      if (a.empty()) return size_t{0};
      Result<size_t> kept =
          FilterMapCuda(a.data(), b.data(), a.size(), t, keep.data(), value.data());
      if (!kept.ok()) return kept.status().WithContext("filter_map (cuda)");
      return kept;
    }
  }
  return InvalidArgument("filter_map: unknown backend");
}

template <typename T>
Result<size_t> Compact(std::span<const T> in, std::span<const uint8_t> keep, std::span<T> out,
                       Backend backend) {
  COUPLER_RETURN_IF_ERROR(CheckSameLength("compact (keep)", in.size(), keep.size()));
  COUPLER_RETURN_IF_ERROR(CheckSameLength("compact", in.size(), out.size()));
  if (Overlaps(in.data(), in.size_bytes(), out.data(), out.size_bytes())) {
    return InvalidArgument("compact: output overlaps the input; use a new column");
  }
  switch (backend) {
    case Backend::kCpu:
      return CompactCpu(in.data(), keep.data(), in.size(), out.data());
    case Backend::kCuda: {
      if (!BuiltWithCuda()) {
        return Unavailable("compact: the CUDA backend was requested but coupler was built "
                           "without CUDA (COUPLER_WITH_CUDA=OFF); use the CPU backend");
      }
      if (in.empty()) return size_t{0};
      Result<size_t> kept = CompactCuda(in.data(), keep.data(), in.size(), out.data());
      if (!kept.ok()) return kept.status().WithContext("compact (cuda)");
      return kept;
    }
  }
  return InvalidArgument("compact: unknown backend");
}

template Result<size_t> Compact<float>(std::span<const float>, std::span<const uint8_t>,
                                       std::span<float>, Backend);
template Result<size_t> Compact<int32_t>(std::span<const int32_t>, std::span<const uint8_t>,
                                         std::span<int32_t>, Backend);
template Result<size_t> Compact<uint16_t>(std::span<const uint16_t>, std::span<const uint8_t>,
                                          std::span<uint16_t>, Backend);
template Result<size_t> Compact<double>(std::span<const double>, std::span<const uint8_t>,
                                        std::span<double>, Backend);
template Result<size_t> Compact<int64_t>(std::span<const int64_t>, std::span<const uint8_t>,
                                         std::span<int64_t>, Backend);
template Result<size_t> Compact<uint8_t>(std::span<const uint8_t>, std::span<const uint8_t>,
                                         std::span<uint8_t>, Backend);

}  // namespace coupler::kernels
