// filter_map: value = a * b in float32, keep the rows whose value exceeds a threshold, and emit
// sqrt(value) for them; plus Compact, which carries any other column's kept rows along. Results
// are bit-identical to the plain scalar loop (float32 multiply, IEEE sqrt, same row order).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "kernels/backend.h"
#include "runtime/status.h"

namespace coupler::kernels {

// keep[i] = (a[i] * b[i] > threshold); value[0..kept) = sqrt(a[i] * b[i]) of the kept rows in
// order; returns kept. `threshold` is compared exactly as the double it is (a product equal to
// float(0.1) is not above 0.1). keep and value have a's length (value's tail past kept is
// scratch). NaN products are never kept. Both backends give the same keep and bit-identical
// value[0..kept), except NaN payloads (the root of a negative product that a negative threshold
// keeps is NaN; GPUs give a canonical one). Unavailable for kCuda in a CPU-only build or without
// a device.
Result<size_t> FilterMap(std::span<const float> a, std::span<const float> b, double threshold,
                         std::span<uint8_t> keep, std::span<float> value, Backend backend);

// out[0..kept) = in[i] for every i with keep[i] != 0, in order; returns kept. `out` has in's
// length and does not overlap it. Instantiated for float, int32_t, uint16_t and double. Both
// backends copy bits exactly; Unavailable for kCuda in a CPU-only build or without a device.
template <typename T>
Result<size_t> Compact(std::span<const T> in, std::span<const uint8_t> keep, std::span<T> out,
                       Backend backend);

// The float32 t with (v > t) == (double(v) > threshold) for every float v, so the kernel can
// compare in float32 yet honour a double threshold exactly.
float FloatThresholdFor(double threshold);

}  // namespace coupler::kernels
