#include "train/model/optimizer.h"

#include <string>

namespace coupler::train {

Result<ParameterOptimizer> ParameterOptimizer::Create(const OptimizerSettings& settings,
                                                      size_t params,
                                                      memory::MemoryBudget& budget,
                                                      TrainBackend& backend) {
  ParameterOptimizer opt;
  opt.settings_ = settings;
  opt.backend_ = &backend;
  opt.params_ = params;
  const size_t slots = settings.kind == Optimizer::kAdamW ? 2 : 1;
  COUPLER_ASSIGN_OR_RETURN(
      opt.state_, budget.Allocate(slots * params * sizeof(float), memory::MemoryKind::kOptimizer,
                                  settings.kind == Optimizer::kAdamW ? "AdamW moments"
                                                                     : "SGD momentum"));
  return opt;
}

Status ParameterOptimizer::Step(float* w, const float* g, float lr) {
  ++steps_;
  float* state = state_.as<float>();
  if (settings_.kind == Optimizer::kSgd) {
    return backend_->kernels().sgd_momentum_step(w, g, state, params_, lr, settings_.momentum,
                                     settings_.weight_decay);
  }
  kernels::AdamWParams p;
  p.lr = lr;
  p.weight_decay = settings_.weight_decay;
  return backend_->kernels().adamw_step(w, g, state, state + params_, params_, p, steps_);
}

Result<std::vector<float>> ParameterOptimizer::StateToHost() const {
  std::vector<float> host(state_size());
  COUPLER_RETURN_IF_ERROR(
      backend_->CopyToHost(host.data(), state_.data(), host.size() * sizeof(float)));
  return host;
}

Status ParameterOptimizer::StateFromHost(const std::vector<float>& state) {
  if (state.size() != state_size()) {
    return InvalidArgument("optimizer state of " + std::to_string(state.size()) +
                           " values, expected " + std::to_string(state_size()));
  }
  return backend_->CopyFromHost(state_.data(), state.data(), state.size() * sizeof(float));
}

}  // namespace coupler::train
