// CUDA twins of the batch kernels, declared without CUDA headers. Host pointers in and out: each
// call copies the column to the calling thread's current device in chunks, runs the kernel and
// copies the result back. Defined in kernels/cuda/*.cu; kernels/nocuda/ supplies stubs that
// return Unavailable, so callers link the same way in every build.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/precision/half.h"
#include "runtime/status.h"

namespace coupler::kernels {

// Elements moved per chunk: bounds the device memory one call holds (128 MiB per float
// buffer) whatever the column length.
inline constexpr size_t kCudaChunkElements = size_t{1} << 25;

// `in` may equal `out` (in place); otherwise they must not overlap.
Status ClipCuda(const float* in, float* out, size_t n, float lo, float hi);

// `in` and `out` must not overlap.
Status CastCuda(const float* in, uint16_t* out, size_t n, precision::HalfFormat format);

}  // namespace coupler::kernels
