// The per-element math of the training kernels (train_kernels.h), as COUPLER_HD functions so the
// CUDA twins (kernels/cuda/train_cuda.cu) compute what the CPU loops compute, element by element.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/train_kernels.h"
#include "runtime/precision/half.h"
#include "runtime/precision/host_device.h"

namespace coupler::kernels {

// Load/store of one element of a storage format, selected at compile time so a kernel is
// compiled once per format. Same bits as kernels/cpu/storage_access.h (whose fp16 load is a
// vectorizable rewrite of HalfBitsToFloat, tested equal on all 65536 inputs).
template <ElementType kStorage>
struct StorageElement;

template <>
struct StorageElement<ElementType::kFloat32> {
  using Bits = float;
  COUPLER_HD static float Load(float x) { return x; }
  COUPLER_HD static float Store(float x) { return x; }
};

template <>
struct StorageElement<ElementType::kFloat16> {
  using Bits = uint16_t;
  COUPLER_HD static float Load(uint16_t h) { return precision::HalfBitsToFloat(h); }
  COUPLER_HD static uint16_t Store(float x) { return precision::FloatToHalfBits(x); }
};

template <>
struct StorageElement<ElementType::kBFloat16> {
  using Bits = uint16_t;
  COUPLER_HD static float Load(uint16_t b) { return precision::Bf16BitsToFloat(b); }
  COUPLER_HD static uint16_t Store(float x) { return precision::FloatToBf16Bits(x); }
};

// Zero where v < 0, so NaN (and -0) pass through unchanged, as in the CPU twin.
COUPLER_HD inline float ReluValue(float v) { return v < 0.0f ? 0.0f : v; }

// True when the fp32 bits are inf or NaN.
COUPLER_HD inline bool IsNonFinite(float x) {
  return (precision::Float32Bits(x) & 0x7F800000u) == 0x7F800000u;
}

// v = momentum * v + g;  w -= lr * (v + weight_decay * w)
COUPLER_HD inline void SgdMomentumElement(float& w, float g, float& v, float lr, float momentum,
                                          float weight_decay) {
  v = momentum * v + g;
  w -= lr * (v + weight_decay * w);
}

// The per-step constants of AdamW: bias corrections computed once in double on the host.
struct AdamWStepConstants {
  float lr;
  float beta1;
  float beta2;
  float one_minus_beta1;
  float one_minus_beta2;
  float correction1;
  float correction2;
  float eps;
  float weight_decay;
};

inline AdamWStepConstants MakeAdamWStepConstants(const AdamWParams& params, int64_t step) {
  return {params.lr,
          params.beta1,
          params.beta2,
          1.0f - params.beta1,
          1.0f - params.beta2,
          static_cast<float>(1.0 - std::pow(static_cast<double>(params.beta1), step)),
          static_cast<float>(1.0 - std::pow(static_cast<double>(params.beta2), step)),
          params.eps,
          params.weight_decay};
}

COUPLER_HD inline void AdamWElement(float& w, float grad, float& m, float& v,
                                    const AdamWStepConstants& c) {
  m = c.beta1 * m + c.one_minus_beta1 * grad;
  v = c.beta2 * v + c.one_minus_beta2 * grad * grad;
  const float m_hat = m / c.correction1;
  const float v_hat = v / c.correction2;
  w -= c.lr * (m_hat / (sqrtf(v_hat) + c.eps) + c.weight_decay * w);
}

// dlogits of one element: (softmax - onehot) * grad_scale, with p = exp(x - max) * inv_sum, in
// fp32 as the CPU twin.
COUPLER_HD inline float SoftmaxGradValue(float shifted_exp, float inv_sum, bool is_label,
                                         float grad_scale) {
  return is_label ? (shifted_exp * inv_sum - 1.0f) * grad_scale
                  : shifted_exp * inv_sum * grad_scale;
}

}  // namespace coupler::kernels
