#include "train/comm/bucket_math.h"

#include <algorithm>

#include "kernels/train_kernels.h"

namespace coupler::comm {

Result<void*> HostBucketMath::Scratch(size_t bytes) {
  const size_t floats = (bytes + sizeof(float) - 1) / sizeof(float);
  scratch_.resize(std::max(scratch_.size(), floats));
  return static_cast<void*>(scratch_.data());
}

Status HostBucketMath::Copy(float* dst, const float* src, size_t n) {
  std::copy_n(src, n, dst);
  return Status::Ok();
}

// The loops are the CPU kernels' (kernels/cpu/buffers_cpu.cc), so host and table bucket math
// are one code.
Status HostBucketMath::Divide(float* out, const float* in, size_t n, float divisor) {
  return kernels::Divide(out, in, n, divisor);
}

Status HostBucketMath::PackHalf(const float* in, float scale, uint16_t* out, size_t n,
                                ElementType format) {
  return kernels::PackHalf(in, scale, out, n, format);
}

Status HostBucketMath::UnpackHalf(const uint16_t* in, float* out, size_t n,
                                  ElementType format) {
  return kernels::UnpackHalf(in, out, n, format);
}

}  // namespace coupler::comm
