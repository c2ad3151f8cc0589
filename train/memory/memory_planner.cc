#include "train/memory/memory_planner.h"

#include <algorithm>
#include <string>

#include "runtime/util/byte_size.h"
#include "train/memory/memory_budget.h"

namespace coupler::memory {
namespace {

constexpr size_t kFp32Bytes = 4;
constexpr size_t kLabelBytes = 4;  // one int32 class index per sample

// The largest divisor of n that is <= limit (n > 0, limit >= 1). Walks divisor pairs up to
// sqrt(n) rather than counting down from limit, which could take limit steps.
size_t LargestDivisorAtMost(size_t n, size_t limit) {
  size_t best = 1;
  for (size_t i = 1; i <= n / i; ++i) {
    if (n % i != 0) continue;
    if (i <= limit) best = std::max(best, i);
    if (n / i <= limit) best = std::max(best, n / i);
  }
  return best;
}

}  // namespace

MemoryEstimate EstimateMemory(const ModelShape& shape, size_t gemm_workspace_bytes) {
  const std::vector<size_t>& layers = shape.layers;
  const size_t cb = shape.compute_bytes;
  const bool reduced_precision = cb < kFp32Bytes;

  size_t weights = 0;
  size_t biases = 0;
  for (size_t i = 0; i + 1 < layers.size(); ++i) {
    weights += layers[i] * layers[i + 1];
    biases += layers[i + 1];
  }
  const size_t params = weights + biases;

  MemoryEstimate estimate;
  estimate.parameters = params;
  const size_t optimizer_words = shape.optimizer == OptimizerKind::kAdamW ? 2 : 1;
  estimate.fixed_bytes = kFp32Bytes * params              // masters
                         + kFp32Bytes * (params + shape.gradient_tail)  // gradients
                         + kFp32Bytes * optimizer_words * params;
  if (reduced_precision) {
    // Only weights get a rounded copy: biases are added in fp32 inside the kernels.
    estimate.fixed_bytes += cb * weights + gemm_workspace_bytes;
  }

  // The input is staged in fp32 as read, plus a rounded copy when the GEMMs run in 16 bits.
  size_t per_sample = kLabelBytes + kFp32Bytes * layers[0] + (reduced_precision ? cb * layers[0] : 0);
  size_t widest = 0;
  for (size_t i = 1; i < layers.size(); ++i) {
    per_sample += cb * layers[i];  // every layer's output, kept for the backward pass
    widest = std::max(widest, layers[i]);
  }
  // Backward ping-pongs the activation gradient between two buffers sized for the widest layer
  // (no gradient is computed for the input itself).
  per_sample += 2 * cb * widest;
  estimate.per_sample_bytes = per_sample;
  return estimate;
}

Result<size_t> PickMicroBatch(const MemoryEstimate& estimate, size_t budget_bytes,
                              size_t max_micro_batch, size_t must_divide) {
  if (max_micro_batch == 0) return InvalidArgument("max micro-batch must be at least 1");

  size_t fit = max_micro_batch;
  if (budget_bytes != 0) {
    if (estimate.fixed_bytes > budget_bytes ||
        estimate.per_sample_bytes > budget_bytes - estimate.fixed_bytes) {
      return ResourceExhausted(
          "the model does not fit the device memory budget even at micro-batch 1: " +
          util::FormatBytes(estimate.fixed_bytes) +
          " fixed (weights, gradients, optimizer state, compute copies, workspace) + " +
          util::FormatBytes(estimate.per_sample_bytes) + " per sample exceeds the budget of " +
          util::FormatBytes(budget_bytes) +
          "; use a smaller model or a larger --device-memory-limit");
    }
    // Division, not Total(m) in a loop: per-sample bytes times a large m could overflow.
    if (estimate.per_sample_bytes != 0) {
      fit = std::min(fit, (budget_bytes - estimate.fixed_bytes) / estimate.per_sample_bytes);
    }
  }
  if (must_divide != 0) fit = LargestDivisorAtMost(must_divide, fit);
  return fit;
}

}  // namespace coupler::memory
