#include "worker/train/optimizer.h"

#include "kernels/train_kernels.h"

namespace coupler::train {

Result<ParameterOptimizer> ParameterOptimizer::Create(const OptimizerSettings& settings,
                                                      size_t params,
                                                      memory::MemoryBudget& budget) {
  ParameterOptimizer opt;
  opt.settings_ = settings;
  opt.params_ = params;
  const size_t slots = settings.kind == Optimizer::kAdamW ? 2 : 1;
  COUPLER_ASSIGN_OR_RETURN(
      opt.state_, budget.Allocate(slots * params * sizeof(float), memory::MemoryKind::kOptimizer,
                                  settings.kind == Optimizer::kAdamW ? "AdamW moments"
                                                                     : "SGD momentum"));
  return opt;
}

void ParameterOptimizer::Step(float* w, const float* g) {
  ++steps_;
  float* state = state_.as<float>();
  if (settings_.kind == Optimizer::kSgd) {
    kernels::SgdMomentumStep(w, g, state, params_, settings_.lr, settings_.momentum,
                             settings_.weight_decay);
    return;
  }
  kernels::AdamWParams p;
  p.lr = settings_.lr;
  p.weight_decay = settings_.weight_decay;
  kernels::AdamWStep(w, g, state, state + params_, params_, p, steps_);
}

}  // namespace coupler::train
