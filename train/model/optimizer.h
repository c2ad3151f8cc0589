// The optimizer over the flat fp32 master weights: SGD with momentum or AdamW, its state charged
// to the memory budget (where the backend computes) and copied whole for checkpoints.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "train/memory/memory_budget.h"
#include "runtime/status.h"
#include "train/backend/train_backend.h"
#include "train/config/train_config.h"

namespace coupler::train {

struct OptimizerSettings {
  Optimizer kind = Optimizer::kAdamW;
  float momentum = 0.9f;      // SGD momentum; AdamW's beta1 stays 0.9
  float weight_decay = 0.0f;  // decoupled, applied to every parameter
};

class ParameterOptimizer {
 public:
  // budget and backend are borrowed and must outlive the optimizer.
  static Result<ParameterOptimizer> Create(const OptimizerSettings& settings, size_t params,
                                           memory::MemoryBudget& budget, TrainBackend& backend);

  // One update of w from the (already averaged, unscaled) gradients g at learning rate `lr`
  // (the schedule's for this step); buffer pointers.
  Status Step(float* w, const float* g, float lr);

  int64_t steps_taken() const { return steps_; }
  // SGD: velocity; AdamW: first moments then second moments. Checkpoints save and restore it.
  size_t state_size() const { return state_.bytes() / sizeof(float); }
  Result<std::vector<float>> StateToHost() const;
  Status StateFromHost(const std::vector<float>& state);  // state_size() values
  void RestoreSteps(int64_t steps) { steps_ = steps; }

 private:
  ParameterOptimizer() = default;

  OptimizerSettings settings_;
  TrainBackend* backend_ = nullptr;
  size_t params_ = 0;
  int64_t steps_ = 0;
  memory::DeviceBuffer state_;
};

}  // namespace coupler::train
