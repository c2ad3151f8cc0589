// CheckBatchArithmetic (declared in train_config.h): the one config check that needs the world
// size, with a suggestion that makes the numbers agree.
#include <algorithm>
#include <string>

#include "runtime/check.h"
#include "train/config/train_config.h"

namespace coupler::train {

Status CheckBatchArithmetic(const TrainConfig& config, size_t world_size) {
  COUPLER_CHECK(world_size >= 1) << "CheckBatchArithmetic: world_size 0";
  COUPLER_CHECK(!config.micro_batch_auto()) << "CheckBatchArithmetic: resolve micro_batch first";
  const size_t micro = config.micro_batch;
  const size_t global = config.global_batch;
  size_t per_step = 0;  // micro x ranks: the rows one accumulation round consumes
  size_t product = 0;
  const bool overflow = __builtin_mul_overflow(micro, world_size, &per_step) ||
                        __builtin_mul_overflow(per_step, config.accumulate, &product);
  if (!overflow && product == global) return {};

  const std::string ranks = std::to_string(world_size) + (world_size == 1 ? " rank" : " ranks");
  std::string message = "global_batch " + std::to_string(global) + " != micro_batch " +
                        std::to_string(micro) + " x accumulate " +
                        std::to_string(config.accumulate) + " x ranks " +
                        std::to_string(world_size) + " = " +
                        (overflow ? std::string("(overflow)") : std::to_string(product)) + "; ";
  if (!overflow && global % per_step == 0) {
    return InvalidArgument(message + "with micro_batch " + std::to_string(micro) + " and " +
                           ranks + " use accumulate " + std::to_string(global / per_step));
  }
  message += "no integer accumulate works with micro_batch " + std::to_string(micro) + " and " +
             ranks;
  if (global % world_size != 0) {
    return InvalidArgument(message + " (global_batch must be a multiple of the " +
                           std::to_string(world_size) + " ranks)");
  }
  // The largest micro_batch <= the current one that divides each rank's share.
  const size_t per_rank = global / world_size;
  size_t suggestion = std::min(micro, per_rank);
  while (per_rank % suggestion != 0) --suggestion;
  return InvalidArgument(message + "; use a micro_batch that divides " + std::to_string(per_rank) +
                         ", e.g. micro_batch " + std::to_string(suggestion) + " with accumulate " +
                         std::to_string(per_rank / suggestion));
}

}  // namespace coupler::train
