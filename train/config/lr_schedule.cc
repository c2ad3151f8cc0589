#include "train/config/lr_schedule.h"

#include <cmath>
#include <numbers>

#include <fmt/format.h>

namespace coupler::train {

std::string_view LrShapeName(LrShape shape) {
  switch (shape) {
    case LrShape::kConstant: return "constant";
    case LrShape::kStep: return "step";
    case LrShape::kCosine: return "cosine";
  }
  return "constant";
}

double LearningRateAt(const LrSchedule& s, double lr, int64_t step, int64_t total_steps,
                      int64_t steps_per_epoch) {
  if (step < s.warmup_steps) {
    return lr * static_cast<double>(step + 1) / static_cast<double>(s.warmup_steps);
  }
  const int64_t after = step - s.warmup_steps;
  switch (s.shape) {
    case LrShape::kConstant: return lr;
    case LrShape::kStep: {
      const int64_t every = s.step_every > 0 ? s.step_every : steps_per_epoch;
      return every > 0 ? lr * std::pow(s.step_gamma, static_cast<double>(after / every)) : lr;
    }
    case LrShape::kCosine: {
      const int64_t span = total_steps - s.warmup_steps;
      if (span <= 0) return lr;
      const double t = std::min(1.0, static_cast<double>(after) / static_cast<double>(span));
      return lr * (s.min_ratio + (1.0 - s.min_ratio) * (1.0 + std::cos(std::numbers::pi * t)) / 2.0);
    }
  }
  return lr;
}

std::string ScheduleIdentity(const LrSchedule& s) {
  if (s.constant()) return "";
  std::string id = fmt::format("lr_schedule={}; warmup_steps={}", LrShapeName(s.shape), s.warmup_steps);
  if (s.shape == LrShape::kStep) id += fmt::format("; lr_step_every={}; lr_step_gamma={}", s.step_every, s.step_gamma);
  if (s.shape == LrShape::kCosine) id += fmt::format("; lr_min_ratio={}", s.min_ratio);
  return id;
}

}  // namespace coupler::train
