// The per-element math of the batch kernels, shared by the CPU loops (kernels/cpu/) and the
// CUDA kernels (kernels/cuda/) so both twins compute bit-identical results and the CPU tests
// cover the arithmetic the GPU runs.
#pragma once

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

}  // namespace coupler::kernels
