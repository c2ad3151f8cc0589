// Dynamic loss scaling for fp16 training: gradients are computed on loss x scale so small values
// survive fp16's range; a step whose gradients overflow is skipped and the scale halved, and the
// scale doubles after a run of clean steps.
#pragma once

#include <cstdint>

#include "runtime/status.h"

namespace coupler::precision {

struct LossScalerOptions {
  float initial_scale = 65536.0f;  // 2^16
  float growth_factor = 2.0f;
  float backoff_factor = 0.5f;
  int64_t growth_interval = 2000;  // clean steps before the scale grows
  float min_scale = 1.0f;          // below this, training cannot make progress: an error
  float max_scale = 16777216.0f;   // 2^24: keeps scale x max grad finite in fp32
};

class LossScaler {
 public:
  // enabled == false (fp32/bf16): scale() stays 1 and Update only skips steps whose gradients
  // are not finite (see Update). Nonsensical options are a bug (COUPLER_CHECK).
  explicit LossScaler(bool enabled, LossScalerOptions options = {});

  bool enabled() const { return enabled_; }
  float scale() const { return scale_; }
  float inv_scale() const { return 1.0f / scale_; }
  int64_t clean_steps() const { return clean_steps_; }

  // After each optimizer step's all-reduced gradients are checked. Returns true when the step
  // should be applied; false when it must be skipped (grads_finite == false: the scale halves,
  // never below min_scale, and the clean-step count restarts). After growth_interval clean steps
  // in a row the scale doubles, capped at max_scale, and the count restarts. An overflow at
  // min_scale returns Aborted: no scale can make progress then, the message says so (check the
  // learning rate / data for inf/NaN, or use bf16); the state is left unchanged.
  // Disabled: returns grads_finite and changes nothing, since applying inf/NaN gradients would
  // still destroy the weights; the caller decides how many skipped steps it tolerates.
  Result<bool> Update(bool grads_finite);

  // For checkpoints: the exact state, so a resumed run continues bit-identically. Values
  // outside the options' range are clamped (a non-finite or non-positive scale becomes
  // initial_scale); a disabled scaler ignores the call.
  void Restore(float scale, int64_t clean_steps);

 private:
  bool enabled_;
  LossScalerOptions options_;
  float scale_;
  int64_t clean_steps_ = 0;
};

}  // namespace coupler::precision
