// clip: bound every value of a float32 column to [lo, hi]. NaN stays NaN (see elementwise.h);
// -inf and +inf become lo and hi.
#pragma once

#include <span>

#include "kernels/backend.h"
#include "runtime/status.h"

namespace coupler::kernels {

// `out` must have in's length and either be `in` itself (in place) or not overlap it at all.
// lo <= hi, neither NaN. Returns InvalidArgument for bad arguments, Unavailable for kCuda in a
// CPU-only build or without a device, ResourceExhausted when device memory runs out.
Status Clip(std::span<const float> in, std::span<float> out, float lo, float hi,
            Backend backend);

// In place.
Status Clip(std::span<float> data, float lo, float hi, Backend backend);

}  // namespace coupler::kernels
