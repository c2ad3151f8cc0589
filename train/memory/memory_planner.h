// Estimates a data-parallel MLP step's device memory and picks the largest micro-batch that fits
// a budget. Pure arithmetic over the model shape: no allocation, so it is unit-tested directly
// and agrees with what the trainer then allocates (the trainer charges the same buffers).
#pragma once

#include <cstddef>
#include <vector>

#include "runtime/status.h"

namespace coupler::memory {

enum class OptimizerKind { kSgd, kAdamW };

struct ModelShape {
  std::vector<size_t> layers;  // widths, input first: {64, 128, 10}
  OptimizerKind optimizer = OptimizerKind::kAdamW;
  size_t compute_bytes = 4;    // bytes per activation / compute-copy element: 4 fp32, 2 fp16/bf16
  size_t gradient_tail = 0;    // extra fp32 values stored after the gradients
};

struct MemoryEstimate {
  size_t parameters = 0;          // count of weights + biases
  size_t fixed_bytes = 0;         // masters + gradients + optimizer state + compute copies + workspace
  size_t per_sample_bytes = 0;    // activations, their gradients, and the staged input/labels
  size_t Total(size_t micro_batch) const { return fixed_bytes + per_sample_bytes * micro_batch; }
};

// The buffers, exactly as the trainer allocates them:
//   masters 4·P, gradients 4·(P + gradient_tail), optimizer 4·P (SGD momentum) or 8·P (AdamW moments),
//   compute copies compute_bytes·W when compute_bytes < 4 (weights only; biases stay fp32),
//   workspace: kernels::kGemmWorkspaceBytes when compute_bytes < 4,
//   per sample: the staged input in fp32 (4·layers[0]) + label (4) + its rounded copy
//   (compute_bytes·layers[0], 16-bit runs only) + every layer's output (compute_bytes·width)
//   + two activation-gradient buffers of the widest non-input layer (compute_bytes each).
// with P = sum over i of layers[i]·layers[i+1] + layers[i+1] (weights and biases) and
// W = sum over i of layers[i]·layers[i+1] (weights only). Fewer than two widths means no
// parameters; rejecting such a shape is the config validator's job.
MemoryEstimate EstimateMemory(const ModelShape& shape, size_t gemm_workspace_bytes);

// The largest micro-batch m <= max_micro_batch with Total(m) <= budget_bytes, and that divides
// `must_divide` when it is non-zero (so micro_batch x accumulate x ranks still equals the global
// batch). budget_bytes == 0 means unlimited. ResourceExhausted when not even m = 1 fits, naming
// the fixed and per-sample bytes and the budget; InvalidArgument when max_micro_batch == 0.
Result<size_t> PickMicroBatch(const MemoryEstimate& estimate, size_t budget_bytes,
                              size_t max_micro_batch, size_t must_divide);

}  // namespace coupler::memory
