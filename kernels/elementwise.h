// The per-element math of the batch kernels, shared by the CPU loops (kernels/cpu/) and the
// CUDA kernels (kernels/cuda/) so both twins compute bit-identical results and the CPU tests
// cover the arithmetic the GPU runs.
#pragma once

#include <cmath>
#include <cstdint>

#include "runtime/precision/half.h"
#include "runtime/precision/host_device.h"

namespace coupler::kernels {

// NaN stays NaN: both comparisons are false for NaN, so it passes through with its bits. A
// NaN in the data is a fault to surface downstream, not to hide by clamping it to a bound
// (which is why this is not fminf/fmaxf: they return the non-NaN operand).
COUPLER_HD constexpr float ClipValue(float v, float lo, float hi) {
  return v < lo ? lo : (v > hi ? hi : v);
}

COUPLER_HD constexpr uint16_t CastToFp16Value(float v) { return precision::FloatToHalfBits(v); }

COUPLER_HD constexpr uint16_t CastToBf16Value(float v) { return precision::FloatToBf16Bits(v); }

// In float64 and rounded once, so a column whose |mean| dwarfs its stddev keeps its precision.
// A subtraction then a multiplication: nothing for a compiler to contract into an FMA, so host
// and device round identically.
COUPLER_HD constexpr float StandardizeValue(float v, double mean, double inv_stddev) {
  return static_cast<float>((static_cast<double>(v) - mean) * inv_stddev);
}

// One row of filter_map: the float32 product, whether it is above the (float) threshold, and
// the square root of kept products. Rows not kept take sqrt(0), which keeps negative products
// off libm's errno path on the host; their root is scratch. NaN compares false: never kept.
struct FilterMapRow {
  uint8_t keep;
  float root;
};

COUPLER_HD inline FilterMapRow FilterMapValue(float a, float b, float threshold) {
  const float v = a * b;
  const bool keep = v > threshold;
  return {static_cast<uint8_t>(keep), sqrtf(keep ? v : 0.0f)};
}

}  // namespace coupler::kernels
