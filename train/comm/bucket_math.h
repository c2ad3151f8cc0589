// The element-wise work of a gradient bucket — dividing by the world size, packing to 16-bit
// wire values and widening them back — apart from the reducer, so buckets that live in GPU memory
// are handled on the GPU while train/comm stays CUDA-free. The host version is the default.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/precision/half.h"
#include "runtime/status.h"

namespace coupler::comm {

class BucketMath {
 public:
  virtual ~BucketMath() = default;

  // Scratch for `bytes`, in the memory the gradients live in; valid until the next call.
  virtual Result<void*> Scratch(size_t bytes) = 0;
  virtual Status Copy(float* dst, const float* src, size_t n) = 0;
  // out[i] = in[i] / divisor; out may equal in.
  virtual Status Divide(float* out, const float* in, size_t n, float divisor) = 0;
  // out[i] = in[i] * scale, rounded to nearest even in `format`.
  virtual Status PackHalf(const float* in, float scale, uint16_t* out, size_t n,
                          ElementType format) = 0;
  virtual Status UnpackHalf(const uint16_t* in, float* out, size_t n,
                            ElementType format) = 0;
};

// Host memory; not thread-safe (one per reducer).
class HostBucketMath final : public BucketMath {
 public:
  Result<void*> Scratch(size_t bytes) override;
  Status Copy(float* dst, const float* src, size_t n) override;
  Status Divide(float* out, const float* in, size_t n, float divisor) override;
  Status PackHalf(const float* in, float scale, uint16_t* out, size_t n,
                  ElementType format) override;
  Status UnpackHalf(const uint16_t* in, float* out, size_t n,
                    ElementType format) override;

 private:
  std::vector<float> scratch_;  // float-aligned, so either wire type fits
};

}  // namespace coupler::comm
