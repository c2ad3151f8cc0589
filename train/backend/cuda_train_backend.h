// The CUDA backend of the trainer: the *Cuda twins of the training kernels over a per-device
// memory pool. CUDA-free; in a build without CUDA, Create answers Unavailable.
#pragma once

#include <memory>

#include "kernels/device_pool.h"
#include "train/backend/device_pool_store.h"
#include "train/backend/train_backend.h"

namespace coupler::train {

// Its methods run on the device that was current when it was created: call them from that
// thread, or after kernels::UseCudaDevice(device()) on another.
class CudaTrainBackend final : public TrainBackend {
 public:
  // Makes `device` the calling thread's current device and reserves its pool: limit_bytes, or
  // the device's free memory less DevicePool's reserve when 0. Unavailable without CUDA or that
  // device; ResourceExhausted when the pool does not fit.
  static Result<std::unique_ptr<CudaTrainBackend>> Create(int device, size_t limit_bytes);

  int device() const { return pool_->device(); }

  std::string name() const override { return "cuda:" + std::to_string(device()); }
  bool on_device() const override { return true; }
  memory::BufferStore& store() override { return *store_; }
  size_t memory_capacity() const override { return pool_->limit(); }

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
  explicit CudaTrainBackend(std::unique_ptr<kernels::DevicePool> pool);

  std::unique_ptr<kernels::DevicePool> pool_;
  std::unique_ptr<DevicePoolStore> store_;  // declared after pool_: destroyed first
};

}  // namespace coupler::train
