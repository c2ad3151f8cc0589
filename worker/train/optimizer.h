// The optimizer over the flat fp32 master weights: SGD with momentum or AdamW, its state charged
// to the memory budget and exposed whole for checkpoints.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "runtime/memory/memory_budget.h"
#include "runtime/status.h"
#include "worker/train/train_config.h"

namespace coupler::train {

struct OptimizerSettings {
  Optimizer kind = Optimizer::kAdamW;
  float lr = 1e-3f;
  float momentum = 0.9f;      // SGD momentum; AdamW's beta1 stays 0.9
  float weight_decay = 0.0f;  // decoupled, applied to every parameter
};

class ParameterOptimizer {
 public:
  static Result<ParameterOptimizer> Create(const OptimizerSettings& settings, size_t params,
                                           memory::MemoryBudget& budget);

  // One update of w from the (already averaged, unscaled) gradients g.
  void Step(float* w, const float* g);

  int64_t steps_taken() const { return steps_; }
  // SGD: velocity; AdamW: first moments then second moments. Checkpoints save and restore it.
  std::span<float> state() { return {state_.as<float>(), state_.bytes() / sizeof(float)}; }
  void RestoreSteps(int64_t steps) { steps_ = steps; }

 private:
  ParameterOptimizer() = default;

  OptimizerSettings settings_;
  size_t params_ = 0;
  int64_t steps_ = 0;
  memory::DeviceBuffer state_;
};

}  // namespace coupler::train
