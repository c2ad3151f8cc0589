// CPU twins of the batch kernels: tight loops over whole columns that the compiler vectorizes.
// No argument checks here; the public entry points (kernels/clip.h, kernels/cast.h) check first.
#pragma once

#include <cstddef>
#include <cstdint>

namespace coupler::kernels {

// `in` and `out` must not overlap; in-place callers use ClipInPlaceCpu, because the alias
// check a vectorizer inserts for possibly-overlapping pointers rejects in == out and would
// leave the in-place case scalar.
void ClipCpu(const float* in, float* out, size_t n, float lo, float hi);
void ClipInPlaceCpu(float* data, size_t n, float lo, float hi);

// `in` and `out` must not overlap.
void CastToFp16Cpu(const float* in, uint16_t* out, size_t n);
void CastToBf16Cpu(const float* in, uint16_t* out, size_t n);

}  // namespace coupler::kernels
