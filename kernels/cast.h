// cast: a float32 column to fp16 or bf16 bits, rounding to nearest even (runtime/precision/
// half.h defines the exact rules: NaN stays a quiet NaN, overflow becomes inf, subnormals kept).
#pragma once

#include <cstdint>
#include <span>

#include "kernels/backend.h"
#include "runtime/precision/half.h"
#include "runtime/status.h"

namespace coupler::kernels {

// `format` is kFloat16 or kBFloat16; `out` must have in's length and must not overlap `in`.
// Returns InvalidArgument for bad arguments, Unavailable for kCuda in a CPU-only build or
// without a device, ResourceExhausted when device memory runs out.
Status Cast(std::span<const float> in, std::span<uint16_t> out, ElementType format,
            Backend backend);

}  // namespace coupler::kernels
