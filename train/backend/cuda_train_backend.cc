#include "train/backend/cuda_train_backend.h"

#include <utility>

#include "kernels/device.h"
#include "kernels/gemm_cuda.h"
#include "kernels/train_kernels_cuda.h"

namespace coupler::train {
namespace {

kernels::Storage WireStorage(precision::HalfFormat format) {
  return format == precision::HalfFormat::kFp16 ? kernels::Storage::kFp16
                                                : kernels::Storage::kBf16;
}

}  // namespace

using kernels::ConstMatrix;
using kernels::MutMatrix;

Result<std::unique_ptr<CudaTrainBackend>> CudaTrainBackend::Create(int device,
                                                                   size_t limit_bytes) {
  COUPLER_RETURN_IF_ERROR(kernels::UseCudaDevice(device));
  COUPLER_ASSIGN_OR_RETURN(auto pool, kernels::DevicePool::Create(device, limit_bytes));
  return std::unique_ptr<CudaTrainBackend>(new CudaTrainBackend(std::move(pool)));
}

CudaTrainBackend::CudaTrainBackend(std::unique_ptr<kernels::DevicePool> pool)
    : pool_(std::move(pool)), store_(std::make_unique<DevicePoolStore>(*pool_)) {}

Status CudaTrainBackend::Gemm(bool trans_a, bool trans_b, float alpha, ConstMatrix a,
                              ConstMatrix b, float beta, MutMatrix c) {
  return kernels::GemmCuda(trans_a, trans_b, alpha, a, b, beta, c);
}

Status CudaTrainBackend::AddBiasActivate(MutMatrix y, const float* bias, bool relu) {
  return kernels::AddBiasActivateCuda(y, bias, relu);
}

Status CudaTrainBackend::ReluBackward(ConstMatrix y, MutMatrix dy) {
  return kernels::ReluBackwardCuda(y, dy);
}

Status CudaTrainBackend::BiasGradAccumulate(ConstMatrix dy, float* bias_grad) {
  return kernels::BiasGradAccumulateCuda(dy, bias_grad);
}

Result<double> CudaTrainBackend::SoftmaxCrossEntropy(ConstMatrix logits, const int32_t* labels,
                                                     float grad_scale, MutMatrix* dlogits,
                                                     size_t* correct) {
  double loss = 0;
  COUPLER_RETURN_IF_ERROR(
      kernels::SoftmaxCrossEntropyCuda(logits, labels, grad_scale, dlogits, &loss, correct));
  return loss;
}

Status CudaTrainBackend::RoundCopy(const float* src, void* dst, kernels::Storage storage,
                                   size_t n) {
  return kernels::RoundCopyCuda(src, dst, storage, n);
}

Result<bool> CudaTrainBackend::UnscaleAllFinite(float* g, size_t n, bool unscale,
                                                float inv_scale) {
  bool finite = true;
  COUPLER_RETURN_IF_ERROR(unscale ? kernels::UnscaleAllFiniteCuda(g, n, inv_scale, &finite)
                                  : kernels::AllFiniteCuda(g, n, &finite));
  return finite;
}

Status CudaTrainBackend::SgdMomentumStep(float* w, const float* g, float* v, size_t n, float lr,
                                         float momentum, float weight_decay) {
  return kernels::SgdMomentumStepCuda(w, g, v, n, lr, momentum, weight_decay);
}

Status CudaTrainBackend::AdamWStep(float* w, const float* g, float* m, float* v, size_t n,
                                   const kernels::AdamWParams& params, int64_t step) {
  return kernels::AdamWStepCuda(w, g, m, v, n, params, step);
}

Status CudaTrainBackend::Zero(void* dst, size_t bytes) {
  return kernels::FillZeroCuda(dst, bytes);
}

Status CudaTrainBackend::CopyFromHost(void* dst, const void* host_src, size_t bytes) {
  return kernels::CopyHostToDeviceCuda(dst, host_src, bytes);
}

Status CudaTrainBackend::CopyToHost(void* host_dst, const void* src, size_t bytes) {
  return kernels::CopyDeviceToHostCuda(host_dst, src, bytes);
}

Status CudaTrainBackend::CopyFloats(float* dst, const float* src, size_t n) {
  // fp32 -> fp32 RoundCopy is a device-to-device copy.
  return kernels::RoundCopyCuda(src, dst, kernels::Storage::kFloat32, n);
}

Status CudaTrainBackend::Divide(float* out, const float* in, size_t n, float divisor) {
  return kernels::DivideCuda(out, in, n, divisor);
}

Status CudaTrainBackend::PackHalf(const float* in, float scale, uint16_t* out, size_t n,
                                  precision::HalfFormat format) {
  return kernels::PackHalfCuda(in, scale, out, n, WireStorage(format));
}

Status CudaTrainBackend::UnpackHalf(const uint16_t* in, float* out, size_t n,
                                    precision::HalfFormat format) {
  return kernels::UnpackHalfCuda(in, out, n, WireStorage(format));
}

}  // namespace coupler::train
