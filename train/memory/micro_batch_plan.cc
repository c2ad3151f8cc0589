#include "train/memory/micro_batch_plan.h"

#include "kernels/train_kernels.h"
#include "runtime/util/byte_size.h"
#include "train/memory/memory_budget.h"

namespace coupler::train {

memory::ModelShape ShapeOf(const TrainConfig& config) {
  memory::ModelShape shape;
  shape.layers = config.layers;
  shape.optimizer = config.optimizer == Optimizer::kSgd ? memory::OptimizerKind::kSgd
                                                        : memory::OptimizerKind::kAdamW;
  shape.compute_bytes = config.precision == ElementType::kFloat32 ? 4 : 2;
  shape.gradient_tail = kGradientTail;
  return shape;
}

Result<MicroBatchChoice> ChooseMicroBatch(const TrainConfig& config, size_t world_size,
                                          size_t limit_bytes) {
  MicroBatchChoice choice;
  if (!config.micro_batch_auto()) {
    COUPLER_RETURN_IF_ERROR(CheckBatchArithmetic(config, world_size));
    choice.micro_batch = config.micro_batch;
    choice.accumulate = config.accumulate;
    return choice;
  }
  if (config.global_batch % world_size != 0) {
    return InvalidArgument("global_batch " + std::to_string(config.global_batch) +
                           " is not divisible by the " + std::to_string(world_size) + " ranks");
  }
  const size_t per_rank = config.global_batch / world_size;
  const memory::MemoryEstimate estimate =
      memory::EstimateMemory(ShapeOf(config), kernels::kGemmWorkspaceBytes);
  COUPLER_ASSIGN_OR_RETURN(choice.micro_batch,
                           memory::PickMicroBatch(estimate, limit_bytes, per_rank, per_rank));
  choice.accumulate = per_rank / choice.micro_batch;
  choice.reason = "micro_batch auto: " + std::to_string(choice.micro_batch) + " x accumulate " +
                  std::to_string(choice.accumulate) + " per rank (" +
                  util::FormatBytes(estimate.fixed_bytes) + " fixed + " +
                  util::FormatBytes(estimate.per_sample_bytes) + " per sample, limit " +
                  (limit_bytes == 0 ? std::string("none") : util::FormatBytes(limit_bytes)) +
                  ")";
  if (choice.accumulate != config.accumulate) {
    choice.notice = "micro_batch auto changed accumulate " + std::to_string(config.accumulate) +
                    " -> " + std::to_string(choice.accumulate) + " (micro_batch " +
                    std::to_string(choice.micro_batch) + " x accumulate " +
                    std::to_string(choice.accumulate) + " x " + std::to_string(world_size) +
                    " ranks = global_batch " + std::to_string(config.global_batch) + ")";
  }
  return choice;
}

size_t BackOffMicroBatch(size_t per_rank, size_t micro_batch) {
  for (size_t m = micro_batch / 2; m >= 1; --m) {
    if (per_rank % m == 0) return m;
  }
  return 0;
}

}  // namespace coupler::train
