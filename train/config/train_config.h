// The training config: a flat YAML file of the keys below, with `--set KEY=VALUE` overrides,
// checked whole before any rank allocates memory or touches the network.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/precision/element_type.h"
#include "runtime/status.h"
#include "train/config/lr_schedule.h"

namespace coupler::train {

enum class Optimizer { kSgd, kAdamW };

std::string_view PrecisionName(ElementType precision);  // "fp32" | "fp16" | "bf16"
std::string_view OptimizerName(Optimizer optimizer);    // "sgd" | "adamw"

struct TrainConfig {
  std::string data;                 // a CSV file or a directory of .npy shards; resolved
                                    // against the config file's directory when relative
  std::string label_column = "label";
  double test_fraction = 0.2;       // [0, 1)
  std::vector<size_t> layers;       // >= 2 widths, input first, each >= 1
  Optimizer optimizer = Optimizer::kAdamW;
  float lr = 1e-3f;                 // > 0
  float momentum = 0.9f;            // [0, 1)
  float weight_decay = 0.0f;        // >= 0
  int64_t epochs = 1;               // >= 1
  size_t global_batch = 64;         // >= 1
  size_t micro_batch = 0;           // 0 = auto (fit the device memory)
  size_t accumulate = 1;            // >= 1
  ElementType precision = ElementType::kFloat32;  // kFloat32, kFloat16 or kBFloat16 only
  double bucket_mb = 25;            // > 0
  uint64_t seed = 0;
  std::string checkpoint_dir;       // empty = no checkpoints; resolved like data
  int64_t checkpoint_every = 0;     // optimizer steps; 0 = never
  LrSchedule schedule;              // the rate of each step (train/lr_schedule.h)
  double clip_grad_norm = 0;        // > 0: the gradients' global L2 norm is clipped to it
  double validation_fraction = 0;   // [0, 1): training rows scored at each epoch's end
  int64_t early_stop_patience = 0;  // > 0: stop after this many epochs without a better val_loss

  bool micro_batch_auto() const { return micro_batch == 0; }
};

// Reads the YAML file (a mapping of scalars and the `layers` list; unknown keys are errors with
// a "did you mean" hint), applies overrides in order ("precision=bf16", "layers=[64,32,10]"),
// checks every value's type and range. Errors name the file, the key and, for the file, the
// line ("train.yaml:7:5: lr: expected a positive number, got 'abc'"); overrides are named as
// "--set KEY=VALUE". Relative `data` and `checkpoint_dir` resolve against the config file's
// directory, made absolute (overrides against the current directory), and are lexically
// normalized. NotFound for a missing file, InvalidArgument for everything else. Does not check
// global_batch (needs the world size): see CheckBatchArithmetic.
Result<TrainConfig> LoadTrainConfig(const std::string& path,
                                    const std::vector<std::string>& overrides);

// Same, from text (path only names the source in messages; relative paths resolve against
// base_dir).
Result<TrainConfig> ParseTrainConfig(std::string_view text, std::string_view source_name,
                                     const std::string& base_dir,
                                     const std::vector<std::string>& overrides);

// global_batch == micro_batch x accumulate x world_size. micro_batch must be resolved (not
// auto) and world_size >= 1 (checked: calling otherwise is a bug). InvalidArgument that shows the
// product and suggests a consistent accumulate when one exists, else a micro_batch that works:
// "global_batch 64 != micro_batch 16 x accumulate 4 x ranks 2 = 128; with micro_batch 16 and
// 2 ranks use accumulate 2".
Status CheckBatchArithmetic(const TrainConfig& config, size_t world_size);

}  // namespace coupler::train
