// The CPU backend of the trainer: the kernels of kernels/train_kernels.h over host memory, called
// exactly as the trainer always called them, so CPU results stay bit-for-bit what they were.
#pragma once

#include "train/comm/bucket_math.h"
#include "train/backend/train_backend.h"

namespace coupler::train {

class CpuTrainBackend final : public TrainBackend {
 public:
  std::string name() const override { return "cpu"; }
  bool on_device() const override { return false; }
  memory::BufferStore& store() override { return memory::HostBufferStore::Instance(); }
  size_t memory_capacity() const override { return 0; }

  Status Gemm(bool trans_a, bool trans_b, float alpha, kernels::ConstMatrix a,
              kernels::ConstMatrix b, float beta, kernels::MutMatrix c) override;
  Status AddBiasActivate(kernels::MutMatrix y, const float* bias, bool relu) override;
  Status ReluBackward(kernels::ConstMatrix y, kernels::MutMatrix dy) override;
  Status BiasGradAccumulate(kernels::ConstMatrix dy, float* bias_grad) override;
  Result<double> SoftmaxCrossEntropy(kernels::ConstMatrix logits, const int32_t* labels,
                                     float grad_scale, kernels::MutMatrix* dlogits,
                                     size_t* correct) override;
  Status RoundCopy(const float* src, void* dst, kernels::Storage storage, size_t n) override;
  Result<bool> UnscaleAllFinite(float* g, size_t n, bool unscale, float inv_scale) override;
  Status SgdMomentumStep(float* w, const float* g, float* v, size_t n, float lr, float momentum,
                         float weight_decay) override;
  Status AdamWStep(float* w, const float* g, float* m, float* v, size_t n,
                   const kernels::AdamWParams& params, int64_t step) override;

  Status Zero(void* dst, size_t bytes) override;
  Status CopyFromHost(void* dst, const void* host_src, size_t bytes) override;
  Status CopyToHost(void* host_dst, const void* src, size_t bytes) override;

  Status CopyFloats(float* dst, const float* src, size_t n) override;
  Status Divide(float* out, const float* in, size_t n, float divisor) override;
  Status PackHalf(const float* in, float scale, uint16_t* out, size_t n,
                  precision::HalfFormat format) override;
  Status UnpackHalf(const uint16_t* in, float* out, size_t n,
                    precision::HalfFormat format) override;

 private:
  comm::HostBucketMath bucket_math_;  // the reducer's own host math, so the bits agree
};

}  // namespace coupler::train
