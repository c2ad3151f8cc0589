// The data-parallel MLP: fp32 master weights and gradients in single flat buffers (so the
// reducer, the optimizer and checkpoints see one array), compute copies rounded to the training
// precision, and activations sized for one micro-batch — every byte charged to a MemoryBudget.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "kernels/train_kernels.h"
#include "train/comm/gradient_reducer.h"
#include "train/memory/memory_budget.h"
#include "runtime/status.h"
#include "train/backend/train_backend.h"

namespace coupler::train {

class Mlp {
 public:
  // layers: widths, input first (>= 2 entries). Weights are He-uniform for hidden layers and
  // Glorot-uniform for the output layer, biases zero, drawn from `seed` the same way on every
  // platform. ResourceExhausted when the fixed buffers do not fit the budget. The budget must be
  // backed by backend.store(); both are borrowed and must outlive the model.
  // `grad_tail` extra floats follow the gradients in the same buffer (grad_tail()), so values
  // that must travel with them — a step's verdicts — ride in the same all-reduce bucket without
  // a staging copy.
  static Result<Mlp> Create(const std::vector<size_t>& layers, ElementType compute,
                            memory::MemoryBudget& budget, TrainBackend& backend, uint64_t seed,
                            size_t grad_tail = 0);

  Mlp(Mlp&&) noexcept = default;
  Mlp& operator=(Mlp&&) noexcept = default;

  TrainBackend& backend() const { return *backend_; }
  const std::vector<size_t>& layers() const { return layers_; }
  ElementType compute_storage() const { return compute_; }
  size_t num_params() const { return num_params_; }
  size_t num_weights() const { return num_weights_; }  // matrices only, no biases
  // Buffer pointers (device memory on a GPU backend).
  float* params() { return masters_.as<float>(); }
  const float* params() const { return masters_.as<float>(); }
  float* grads() { return grads_.as<float>(); }
  float* grad_tail() { return grads() + num_params_; }

  // Every gradient and the tail as one contiguous tensor, in layer order (weights then bias):
  // the reducer all-reduces it in place, bucket by bucket.
  comm::GradientTensor GradientsWithTail() { return {grads(), num_params_ + grad_tail_}; }

  // The fp32 masters, copied to or from host memory (n == num_params()).
  Status ParamsToHost(float* host) const;
  Status ParamsFromHost(const float* host);

  Status ZeroGrads();
  // Re-rounds the compute copies from the masters; call after every optimizer step.
  Status RefreshComputeCopies();

  // Sizes the activation buffers for micro-batches of up to `micro_batch` rows (no-op when they
  // already are). ResourceExhausted, with nothing held, when they do not fit.
  Status ReserveActivations(size_t micro_batch);
  void ReleaseActivations();
  size_t reserved_micro_batch() const { return reserved_rows_; }

  // Forward and backward over m <= reserved rows of x and y (buffer pointers). Gradients
  // ACCUMULATE into grads(): grads += grad_scale x d(sum of per-row losses)/dW. Returns the sum
  // of per-row losses.
  Result<double> ForwardBackward(const float* x, const int32_t* y, size_t m, float grad_scale);

  // Forward only; returns the loss sum and adds correct predictions to *correct (host).
  Result<double> Evaluate(const float* x, const int32_t* y, size_t m, size_t* correct);

 private:
  Mlp() = default;
  kernels::ConstMatrix Weights(size_t layer) const;
  kernels::MutMatrix Output(size_t layer, size_t m);
  Status Forward(const float* x, size_t m);

  std::vector<size_t> layers_;
  ElementType compute_ = ElementType::kFloat32;
  memory::MemoryBudget* budget_ = nullptr;
  TrainBackend* backend_ = nullptr;
  size_t num_params_ = 0;
  size_t num_weights_ = 0;
  size_t grad_tail_ = 0;
  std::vector<size_t> weight_offset_;   // into masters/grads, per layer
  std::vector<size_t> bias_offset_;
  std::vector<size_t> compute_offset_;  // into the compute copy (weights only)
  memory::DeviceBuffer masters_;
  memory::DeviceBuffer grads_;
  memory::DeviceBuffer compute_copy_;   // empty for fp32: the GEMMs read the masters
  memory::DeviceBuffer workspace_;      // charges the GEMM widening tiles of 16-bit runs

  size_t reserved_rows_ = 0;
  memory::DeviceBuffer input_;                 // rows x layers[0], compute storage
  std::vector<memory::DeviceBuffer> outputs_;  // per layer: rows x layers[i+1]
  memory::DeviceBuffer delta_[2];              // activation gradients, rows x widest layer
};

}  // namespace coupler::train
