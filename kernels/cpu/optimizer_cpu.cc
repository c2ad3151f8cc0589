// CPU optimizer updates on fp32 master weights. Plain sequential loops in a fixed order, so a
// step is bit-for-bit reproducible: every rank applies the same update to the same weights and
// replicas never drift apart. The element math is shared with the CUDA twins
// (kernels/train_elementwise.h).
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "kernels/train_elementwise.h"
#include "kernels/train_kernels.h"
#include "runtime/check.h"

namespace coupler::kernels {
namespace {

constexpr size_t kBlock = 16;  // see kernels/cpu/column_loop.h

}  // namespace

Status SgdMomentumStep(float* __restrict w, const float* __restrict g, float* __restrict v, size_t n,
                       float lr, float momentum, float weight_decay) {
  if (n == 0) return Status::Ok();
  COUPLER_CHECK(w != nullptr && g != nullptr && v != nullptr) << "SgdMomentumStep: null buffer";
  size_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    for (size_t j = i; j < i + kBlock; ++j)
      SgdMomentumElement(w[j], g[j], v[j], lr, momentum, weight_decay);
  }
  for (; i < n; ++i) SgdMomentumElement(w[i], g[i], v[i], lr, momentum, weight_decay);
  return Status::Ok();
}

Status AdamWStep(float* __restrict w, const float* __restrict g, float* __restrict m,
                 float* __restrict v, size_t n, const AdamWParams& params, int64_t step) {
  COUPLER_CHECK(step >= 1) << "AdamWStep: step counts from 1, got " << step;
  // beta == 1 would make a bias correction zero and every weight NaN.
  COUPLER_CHECK(params.beta1 >= 0.0f && params.beta1 < 1.0f && params.beta2 >= 0.0f &&
                params.beta2 < 1.0f)
      << "AdamWStep: betas must lie in [0, 1), got " << params.beta1 << ", " << params.beta2;
  if (n == 0) return Status::Ok();
  COUPLER_CHECK(w != nullptr && g != nullptr && m != nullptr && v != nullptr)
      << "AdamWStep: null buffer";
  // The bias corrections in double: 1 - beta2^t is ~1e-3 at t = 1 and would lose digits in
  // float. They are applied as fp32 divisors, like every other term.
  const AdamWStepConstants constants = MakeAdamWStepConstants(params, step);
  for (size_t i = 0; i < n; ++i) AdamWElement(w[i], g[i], m[i], v[i], constants);
  return Status::Ok();
}

}  // namespace coupler::kernels
