// The gradient reducer's bucket math on a backend's kernel table, for gradients that live in
// device memory: the reducer's divide/pack/unpack then run where the buckets are, and its
// staging is charged to the run's memory budget like every other buffer.
#pragma once

#include "train/comm/bucket_math.h"
#include "train/memory/memory_budget.h"
#include "train/backend/train_backend.h"

namespace coupler::train {

class BackendBucketMath final : public comm::BucketMath {
 public:
  // Both borrowed; they must outlive this object.
  BackendBucketMath(const TrainBackend& backend, memory::MemoryBudget& budget)
      : kernels_(backend.kernels()), budget_(budget) {}

  Result<void*> Scratch(size_t bytes) override;
  Status Copy(float* dst, const float* src, size_t n) override {
    // An fp32 -> fp32 RoundCopy is a copy within the backend's memory.
    return kernels_.round_copy(src, dst, ElementType::kFloat32, n);
  }
  Status Divide(float* out, const float* in, size_t n, float divisor) override {
    return kernels_.divide(out, in, n, divisor);
  }
  Status PackHalf(const float* in, float scale, uint16_t* out, size_t n,
                  ElementType format) override {
    return kernels_.pack_half(in, scale, out, n, format);
  }
  Status UnpackHalf(const uint16_t* in, float* out, size_t n,
                    ElementType format) override {
    return kernels_.unpack_half(in, out, n, format);
  }

 private:
  const kernels::TrainKernelTable& kernels_;
  memory::MemoryBudget& budget_;
  memory::DeviceBuffer scratch_;  // grows to the largest bucket, then is reused every step
};

}  // namespace coupler::train
