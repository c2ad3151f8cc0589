// Batch kernels on columns already resident on the calling thread's current device, for the
// CUDA benchmarks: no copies and no chunking, so a benchmark times the kernel alone. They run on
// the device's default stream and synchronize before returning (results are ready, faults are
// reported). Scratch (block partials, CUB temp storage) is allocated per call. Pointers are
// device pointers. Declared without CUDA headers; defined in kernels_on_device.cu, or as
// Unavailable in a build without CUDA (kernels_on_device_nocuda.cc).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/column_stats.h"
#include "runtime/precision/half.h"
#include "runtime/status.h"

namespace coupler::bench {

// d_in may equal d_out.
Status StandardizeOnDevice(const float* d_in, float* d_out, size_t n, double mean,
                           double inv_stddev);
// d_in and d_out must not overlap.
Status ClipOnDevice(const float* d_in, float* d_out, size_t n, float lo, float hi);
Status CastOnDevice(const float* d_in, uint16_t* d_out, size_t n, ElementType format);
Result<kernels::ColumnMoments> MomentsOnDevice(const float* d_in, size_t n);
// d_value needs n elements: the first kept hold the roots, the rest are scratch.
Result<size_t> FilterMapOnDevice(const float* d_a, const float* d_b, size_t n, float threshold,
                                 uint8_t* d_keep, float* d_value);

}  // namespace coupler::bench
