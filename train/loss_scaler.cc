#include "train/loss_scaler.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "runtime/check.h"

namespace coupler::precision {

LossScaler::LossScaler(bool enabled, LossScalerOptions options)
    : enabled_(enabled), options_(options), scale_(enabled ? options.initial_scale : 1.0f) {
  // Options come from code, not from users: nonsense here is a bug.
  COUPLER_CHECK(options_.min_scale > 0.0f && options_.min_scale <= options_.max_scale &&
                std::isfinite(options_.max_scale))
      << "loss scale range [" << options_.min_scale << ", " << options_.max_scale << "]";
  COUPLER_CHECK(options_.initial_scale >= options_.min_scale &&
                options_.initial_scale <= options_.max_scale)
      << "initial loss scale " << options_.initial_scale;
  COUPLER_CHECK(options_.growth_factor > 1.0f) << "growth factor " << options_.growth_factor;
  COUPLER_CHECK(options_.backoff_factor > 0.0f && options_.backoff_factor < 1.0f)
      << "backoff factor " << options_.backoff_factor;
  COUPLER_CHECK(options_.growth_interval >= 1) << "growth interval " << options_.growth_interval;
}

Result<bool> LossScaler::Update(bool grads_finite) {
  // Without scaling there is nothing to adjust, but applying inf/NaN gradients would still
  // destroy the weights, so the step is skipped all the same.
  if (!enabled_) return grads_finite;

  if (grads_finite) {
    if (++clean_steps_ >= options_.growth_interval) {
      scale_ = std::min(scale_ * options_.growth_factor, options_.max_scale);
      clean_steps_ = 0;  // the next growth needs a fresh run of clean steps at the new scale
    }
    return true;
  }

  if (scale_ <= options_.min_scale) {
    char buf[320];
    std::snprintf(buf, sizeof(buf),
                  "fp16 loss scale fell to its minimum (%g) and gradients still overflow: the "
                  "loss or gradients are inf/NaN even unscaled; check the data for inf/NaN, "
                  "lower the learning rate, or train with precision=bf16",
                  static_cast<double>(options_.min_scale));
    return Aborted(buf);
  }
  scale_ = std::max(scale_ * options_.backoff_factor, options_.min_scale);
  clean_steps_ = 0;
  return false;
}

void LossScaler::Restore(float scale, int64_t clean_steps) {
  if (!enabled_) return;  // a disabled scaler has no state worth carrying over
  // Clamped rather than trusted: a checkpoint may come from a run with other options, and a
  // corrupt one must not leave a zero or NaN scale behind.
  scale_ = std::isfinite(scale) && scale > 0.0f
               ? std::clamp(scale, options_.min_scale, options_.max_scale)
               : options_.initial_scale;
  clean_steps_ = std::clamp<int64_t>(clean_steps, 0, options_.growth_interval - 1);
}

}  // namespace coupler::precision
