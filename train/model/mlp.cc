#include "train/model/mlp.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "runtime/check.h"

namespace coupler::train {
namespace {

using kernels::ConstMatrix;
using kernels::MutMatrix;
using memory::MemoryKind;

// splitmix64: a fixed, portable generator (std::uniform_real_distribution is not specified
// bit-for-bit across standard libraries, and initial weights must be the same everywhere).
uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Uniform in [-bound, bound): 24 random bits, exact in float.
float UniformSymmetric(uint64_t& state, float bound) {
  const float unit = static_cast<float>(SplitMix64(state) >> 40) * 0x1p-24f;
  return (2.0f * unit - 1.0f) * bound;
}

ConstMatrix AsConst(const MutMatrix& m) { return {m.data, m.storage, m.rows, m.cols}; }

}  // namespace

Result<Mlp> Mlp::Create(const std::vector<size_t>& layers, ElementType compute,
                        memory::MemoryBudget& budget, TrainBackend& backend, uint64_t seed,
                        size_t grad_tail) {
  COUPLER_CHECK(layers.size() >= 2) << "an MLP needs an input and an output width";
  Mlp mlp;
  mlp.layers_ = layers;
  mlp.compute_ = compute;
  mlp.budget_ = &budget;
  mlp.backend_ = &backend;
  size_t weights = 0;
  for (size_t i = 0; i + 1 < layers.size(); ++i) {
    mlp.weight_offset_.push_back(mlp.num_params_);
    mlp.num_params_ += layers[i] * layers[i + 1];
    mlp.bias_offset_.push_back(mlp.num_params_);
    mlp.num_params_ += layers[i + 1];
    mlp.compute_offset_.push_back(weights);
    weights += layers[i] * layers[i + 1];
  }
  mlp.num_weights_ = weights;
  const size_t param_bytes = mlp.num_params_ * sizeof(float);
  COUPLER_ASSIGN_OR_RETURN(mlp.masters_,
                           budget.Allocate(param_bytes, MemoryKind::kMaster, "master weights"));
  mlp.grad_tail_ = grad_tail;
  COUPLER_ASSIGN_OR_RETURN(mlp.grads_,
                           budget.Allocate(param_bytes + grad_tail * sizeof(float),
                                           MemoryKind::kGradient, "gradients"));
  if (compute != ElementType::kFloat32) {
    COUPLER_ASSIGN_OR_RETURN(
        mlp.compute_copy_,
        budget.Allocate(weights * kernels::StorageBytes(compute), MemoryKind::kComputeCopy,
                        "compute copies of the weights"));
    COUPLER_ASSIGN_OR_RETURN(mlp.workspace_,
                             budget.Allocate(kernels::kGemmWorkspaceBytes,
                                             MemoryKind::kWorkspace, "GEMM workspace"));
  }

  uint64_t state = seed ^ 0x6D6C702D696E6974ull;  // "mlp-init": distinct from data shuffles
  // Drawn on the host (biases stay zero), then copied to wherever the backend computes.
  std::vector<float> w(mlp.num_params_, 0.0f);
  for (size_t i = 0; i + 1 < layers.size(); ++i) {
    const size_t in = layers[i];
    const size_t out = layers[i + 1];
    const bool last = i + 2 == layers.size();
    // He for ReLU layers keeps activations' variance steady; Glorot for the softmax layer.
    const float bound = last ? std::sqrt(6.0f / static_cast<float>(in + out))
                             : std::sqrt(6.0f / static_cast<float>(in));
    float* wi = w.data() + mlp.weight_offset_[i];
    for (size_t k = 0; k < in * out; ++k) wi[k] = UniformSymmetric(state, bound);
  }
  COUPLER_RETURN_IF_ERROR(mlp.ParamsFromHost(w.data()));
  COUPLER_RETURN_IF_ERROR(mlp.RefreshComputeCopies());
  return mlp;
}

Status Mlp::ParamsToHost(float* host) const {
  return backend_->CopyToHost(host, params(), num_params_ * sizeof(float));
}

Status Mlp::ParamsFromHost(const float* host) {
  return backend_->CopyFromHost(params(), host, num_params_ * sizeof(float));
}

Status Mlp::ZeroGrads() { return backend_->Zero(grads(), num_params_ * sizeof(float)); }

Status Mlp::RefreshComputeCopies() {
  if (compute_ == ElementType::kFloat32) return Status::Ok();
  const size_t bytes = kernels::StorageBytes(compute_);
  for (size_t i = 0; i + 1 < layers_.size(); ++i) {
    COUPLER_RETURN_IF_ERROR(backend_->kernels().round_copy(
        params() + weight_offset_[i], compute_copy_.as<char>() + compute_offset_[i] * bytes,
        compute_, layers_[i] * layers_[i + 1]));
  }
  return Status::Ok();
}

Status Mlp::ReserveActivations(size_t micro_batch) {
  if (micro_batch == reserved_rows_) return Status::Ok();
  ReleaseActivations();
  const size_t bytes = kernels::StorageBytes(compute_);
  const size_t widest = *std::max_element(layers_.begin() + 1, layers_.end());
  memory::DeviceBuffer input;
  std::vector<memory::DeviceBuffer> outputs;
  memory::DeviceBuffer delta[2];
  if (compute_ != ElementType::kFloat32) {
    COUPLER_ASSIGN_OR_RETURN(input, budget_->Allocate(micro_batch * layers_[0] * bytes,
                                                      MemoryKind::kActivation,
                                                      "input in compute precision"));
  }
  for (size_t i = 1; i < layers_.size(); ++i) {
    COUPLER_ASSIGN_OR_RETURN(
        auto out, budget_->Allocate(micro_batch * layers_[i] * bytes, MemoryKind::kActivation,
                                    "activations of layer " + std::to_string(i)));
    outputs.push_back(std::move(out));
  }
  for (auto& d : delta) {
    COUPLER_ASSIGN_OR_RETURN(d, budget_->Allocate(micro_batch * widest * bytes,
                                                  MemoryKind::kActivation,
                                                  "activation gradients"));
  }
  input_ = std::move(input);
  outputs_ = std::move(outputs);
  delta_[0] = std::move(delta[0]);
  delta_[1] = std::move(delta[1]);
  reserved_rows_ = micro_batch;
  return Status::Ok();
}

void Mlp::ReleaseActivations() {
  input_ = {};
  outputs_.clear();
  delta_[0] = {};
  delta_[1] = {};
  reserved_rows_ = 0;
}

ConstMatrix Mlp::Weights(size_t layer) const {
  const size_t in = layers_[layer];
  const size_t out = layers_[layer + 1];
  if (compute_ == ElementType::kFloat32) {
    return {params() + weight_offset_[layer], ElementType::kFloat32, out, in};
  }
  return {compute_copy_.as<char>() + compute_offset_[layer] * kernels::StorageBytes(compute_),
          compute_, out, in};
}

MutMatrix Mlp::Output(size_t layer, size_t m) {
  return {outputs_[layer].data(), compute_, m, layers_[layer + 1]};
}

Status Mlp::Forward(const float* x, size_t m) {
  COUPLER_CHECK(m > 0 && m <= reserved_rows_) << "micro-batch of " << m << " rows, " << reserved_rows_ << " reserved";
  ConstMatrix h{x, ElementType::kFloat32, m, layers_[0]};
  if (compute_ != ElementType::kFloat32) {
    COUPLER_RETURN_IF_ERROR(backend_->kernels().round_copy(x, input_.data(), compute_, m * layers_[0]));
    h = {input_.data(), compute_, m, layers_[0]};
  }
  const size_t n = layers_.size() - 1;
  for (size_t i = 0; i < n; ++i) {
    MutMatrix out = Output(i, m);
    COUPLER_RETURN_IF_ERROR(backend_->kernels().gemm(false, true, 1.0f, h, Weights(i), 0.0f, out));
    COUPLER_RETURN_IF_ERROR(
        backend_->kernels().add_bias_activate(out, params() + bias_offset_[i], /*relu=*/i + 1 < n));
    h = AsConst(out);
  }
  return Status::Ok();
}

Result<double> Mlp::ForwardBackward(const float* x, const int32_t* y, size_t m,
                                    float grad_scale) {
  COUPLER_RETURN_IF_ERROR(Forward(x, m));
  const size_t n = layers_.size() - 1;
  MutMatrix delta{delta_[0].data(), compute_, m, layers_[n]};
  double loss = 0;
  COUPLER_RETURN_IF_ERROR(backend_->kernels().softmax_cross_entropy(
      AsConst(Output(n - 1, m)), y, grad_scale, &delta, &loss, nullptr));
  int cur = 0;
  for (size_t i = n; i-- > 0;) {
    const ConstMatrix input = i == 0 ? (compute_ == ElementType::kFloat32
                                            ? ConstMatrix{x, ElementType::kFloat32, m, layers_[0]}
                                            : ConstMatrix{input_.data(), compute_, m, layers_[0]})
                                     : AsConst(Output(i - 1, m));
    MutMatrix weight_grad{grads() + weight_offset_[i], ElementType::kFloat32, layers_[i + 1],
                          layers_[i]};
    COUPLER_RETURN_IF_ERROR(
        backend_->kernels().gemm(true, false, 1.0f, AsConst(delta), input, 1.0f, weight_grad));
    COUPLER_RETURN_IF_ERROR(
        backend_->kernels().bias_grad_accumulate(AsConst(delta), grads() + bias_offset_[i]));
    if (i == 0) break;  // no gradient is needed for the input itself
    MutMatrix next{delta_[1 - cur].data(), compute_, m, layers_[i]};
    COUPLER_RETURN_IF_ERROR(
        backend_->kernels().gemm(false, false, 1.0f, AsConst(delta), Weights(i), 0.0f, next));
    COUPLER_RETURN_IF_ERROR(backend_->kernels().relu_backward(input, next));
    delta = next;
    cur = 1 - cur;
  }
  return loss;
}

Result<double> Mlp::Evaluate(const float* x, const int32_t* y, size_t m, size_t* correct) {
  COUPLER_RETURN_IF_ERROR(Forward(x, m));
  double loss = 0;
  COUPLER_RETURN_IF_ERROR(backend_->kernels().softmax_cross_entropy(
      AsConst(Output(layers_.size() - 2, m)), y, 1.0f, nullptr, &loss, correct));
  return loss;
}

}  // namespace coupler::train
