// The learning rate of each optimizer step: a schedule of the config's `lr` (constant, step
// decay or cosine decay, after an optional linear warmup), as a pure function of the step, so a
// resumed run takes the rate an uninterrupted one would, and a test can state the formulas.
//
//   warmup (step s < W):    lr · (s + 1) / W
//   constant:               lr
//   step:                   lr · gamma^floor((s - W) / every)   (every: an epoch's steps unless set)
//   cosine:                 lr · (min_ratio + (1 - min_ratio) · (1 + cos(π · (s - W) / (T - W))) / 2)
//
// with s the 0-based step, W = warmup_steps and T the run's total steps. These are PyTorch's
// LinearLR(start_factor=1/W, total_iters=W-1) for the first W steps, then StepLR(step_size=every,
// gamma) or CosineAnnealingLR(T_max=T-W, eta_min=min_ratio·lr), stepped once per optimizer step.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace coupler::train {

enum class LrShape { kConstant, kStep, kCosine };

std::string_view LrShapeName(LrShape shape);  // "constant" | "step" | "cosine"

struct LrSchedule {
  LrShape shape = LrShape::kConstant;
  int64_t warmup_steps = 0;   // >= 0
  int64_t step_every = 0;     // kStep: steps between decays; 0 = one epoch's steps
  double step_gamma = 0.1;    // kStep: the factor of each decay, (0, 1]
  double min_ratio = 0.0;     // kCosine: the last rate as a share of lr, [0, 1)

  // Whether it is the default (constant lr, no warmup).
  bool constant() const { return shape == LrShape::kConstant && warmup_steps == 0; }
};

// The rate of 0-based step `step` of a run of `total_steps`, `steps_per_epoch` to an epoch.
double LearningRateAt(const LrSchedule& schedule, double lr, int64_t step, int64_t total_steps,
                      int64_t steps_per_epoch);

// "lr_schedule=cosine; warmup_steps=100; lr_min_ratio=0" ("" for the default): the schedule's
// part of a run's identity (train/resume_plan.h).
std::string ScheduleIdentity(const LrSchedule& schedule);

}  // namespace coupler::train
