// The trainer's math and memory behind one narrow interface, so the MLP, the optimizer and the
// step loop run unchanged on the CPU kernels over host memory or the CUDA kernels over device
// memory. Every pointer a method takes is a BUFFER pointer (memory of store()), except the
// host side of the copies.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "kernels/train_kernels.h"
#include "train/memory/buffer_store.h"
#include "runtime/precision/half.h"
#include "runtime/status.h"

namespace coupler::train {

class TrainBackend {
 public:
  virtual ~TrainBackend() = default;

  // "cpu" or "cuda:N": what reports and logs call the device.
  virtual std::string name() const = 0;
  // True when buffers are not host memory, so the host reaches them only through copies.
  virtual bool on_device() const = 0;
  // Backs the MemoryBudget the model's buffers are charged to.
  virtual memory::BufferStore& store() = 0;
  // The memory behind store() in bytes, the budget's limit when none is given; 0 = unbounded.
  virtual size_t memory_capacity() const = 0;

  // ---- The kernels, with the contracts of kernels/train_kernels.h ----
  virtual Status Gemm(bool trans_a, bool trans_b, float alpha, kernels::ConstMatrix a,
                      kernels::ConstMatrix b, float beta, kernels::MutMatrix c) = 0;
  virtual Status AddBiasActivate(kernels::MutMatrix y, const float* bias, bool relu) = 0;
  virtual Status ReluBackward(kernels::ConstMatrix y, kernels::MutMatrix dy) = 0;
  virtual Status BiasGradAccumulate(kernels::ConstMatrix dy, float* bias_grad) = 0;
  // The sum of per-row losses; *correct (host, may be null) += rows predicted right.
  virtual Result<double> SoftmaxCrossEntropy(kernels::ConstMatrix logits, const int32_t* labels,
                                             float grad_scale, kernels::MutMatrix* dlogits,
                                             size_t* correct) = 0;
  virtual Status RoundCopy(const float* src, void* dst, kernels::Storage storage, size_t n) = 0;
  // g *= inv_scale when `unscale`, then whether every g[i] is finite.
  virtual Result<bool> UnscaleAllFinite(float* g, size_t n, bool unscale, float inv_scale) = 0;
  virtual Status SgdMomentumStep(float* w, const float* g, float* v, size_t n, float lr,
                                 float momentum, float weight_decay) = 0;
  virtual Status AdamWStep(float* w, const float* g, float* m, float* v, size_t n,
                           const kernels::AdamWParams& params, int64_t step) = 0;

  // ---- Buffers ----
  virtual Status Zero(void* dst, size_t bytes) = 0;
  virtual Status CopyFromHost(void* dst, const void* host_src, size_t bytes) = 0;
  virtual Status CopyToHost(void* host_dst, const void* src, size_t bytes) = 0;

  // ---- The gradient reducer's bucket math (train/comm/bucket_math.h) ----
  virtual Status CopyFloats(float* dst, const float* src, size_t n) = 0;
  virtual Status Divide(float* out, const float* in, size_t n, float divisor) = 0;
  virtual Status PackHalf(const float* in, float scale, uint16_t* out, size_t n,
                          precision::HalfFormat format) = 0;
  virtual Status UnpackHalf(const uint16_t* in, float* out, size_t n,
                            precision::HalfFormat format) = 0;
};

}  // namespace coupler::train
