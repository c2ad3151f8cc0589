#include "train/backend/cpu_train_backend.h"

#include <cstring>

namespace coupler::train {

using kernels::ConstMatrix;
using kernels::MutMatrix;

Status CpuTrainBackend::Gemm(bool trans_a, bool trans_b, float alpha, ConstMatrix a,
                             ConstMatrix b, float beta, MutMatrix c) {
  kernels::Gemm(trans_a, trans_b, alpha, a, b, beta, c);
  return Status::Ok();
}

Status CpuTrainBackend::AddBiasActivate(MutMatrix y, const float* bias, bool relu) {
  kernels::AddBiasActivate(y, bias, relu);
  return Status::Ok();
}

Status CpuTrainBackend::ReluBackward(ConstMatrix y, MutMatrix dy) {
  kernels::ReluBackward(y, dy);
  return Status::Ok();
}

Status CpuTrainBackend::BiasGradAccumulate(ConstMatrix dy, float* bias_grad) {
  kernels::BiasGradAccumulate(dy, bias_grad);
  return Status::Ok();
}

Result<double> CpuTrainBackend::SoftmaxCrossEntropy(ConstMatrix logits, const int32_t* labels,
                                                    float grad_scale, MutMatrix* dlogits,
                                                    size_t* correct) {
  return kernels::SoftmaxCrossEntropy(logits, labels, grad_scale, dlogits, correct);
}

Status CpuTrainBackend::RoundCopy(const float* src, void* dst, kernels::Storage storage,
                                  size_t n) {
  kernels::RoundCopy(src, dst, storage, n);
  return Status::Ok();
}

Result<bool> CpuTrainBackend::UnscaleAllFinite(float* g, size_t n, bool unscale,
                                               float inv_scale) {
  if (unscale) kernels::Scale(g, n, inv_scale);
  return kernels::AllFinite(g, n);
}

Status CpuTrainBackend::SgdMomentumStep(float* w, const float* g, float* v, size_t n, float lr,
                                        float momentum, float weight_decay) {
  kernels::SgdMomentumStep(w, g, v, n, lr, momentum, weight_decay);
  return Status::Ok();
}

Status CpuTrainBackend::AdamWStep(float* w, const float* g, float* m, float* v, size_t n,
                                  const kernels::AdamWParams& params, int64_t step) {
  kernels::AdamWStep(w, g, m, v, n, params, step);
  return Status::Ok();
}

Status CpuTrainBackend::Zero(void* dst, size_t bytes) {
  if (bytes > 0) std::memset(dst, 0, bytes);
  return Status::Ok();
}

Status CpuTrainBackend::CopyFromHost(void* dst, const void* host_src, size_t bytes) {
  if (bytes > 0 && dst != host_src) std::memcpy(dst, host_src, bytes);
  return Status::Ok();
}

Status CpuTrainBackend::CopyToHost(void* host_dst, const void* src, size_t bytes) {
  if (bytes > 0 && host_dst != src) std::memcpy(host_dst, src, bytes);
  return Status::Ok();
}

Status CpuTrainBackend::CopyFloats(float* dst, const float* src, size_t n) {
  return bucket_math_.Copy(dst, src, n);
}

Status CpuTrainBackend::Divide(float* out, const float* in, size_t n, float divisor) {
  return bucket_math_.Divide(out, in, n, divisor);
}

Status CpuTrainBackend::PackHalf(const float* in, float scale, uint16_t* out, size_t n,
                                 precision::HalfFormat format) {
  return bucket_math_.PackHalf(in, scale, out, n, format);
}

Status CpuTrainBackend::UnpackHalf(const uint16_t* in, float* out, size_t n,
                                   precision::HalfFormat format) {
  return bucket_math_.UnpackHalf(in, out, n, format);
}

}  // namespace coupler::train
