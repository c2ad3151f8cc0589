// The `coupler train` config keys a `train` node may also set as params (they override the
// node's config file): defined once, for the op's schema (builtin_ops.cc), for the train op
// that passes them on as `--set KEY=VALUE`, and for the config loader that reads them
// (train/config/train_config.cc).
#pragma once

#include <optional>
#include <span>
#include <string_view>

#include "runtime/ops/op_def.h"

namespace coupler::ops {

inline constexpr std::string_view kTrainPrecision = "precision";
inline constexpr std::string_view kTrainEpochs = "epochs";
inline constexpr std::string_view kTrainMicroBatch = "micro_batch";
inline constexpr std::string_view kTrainAccumulate = "accumulate";
inline constexpr std::string_view kTrainLr = "lr";
inline constexpr std::string_view kTrainWeightDecay = "weight_decay";
inline constexpr std::string_view kTrainSeed = "seed";
inline constexpr std::string_view kTrainLrSchedule = "lr_schedule";
inline constexpr std::string_view kTrainWarmupSteps = "warmup_steps";
inline constexpr std::string_view kTrainClipGradNorm = "clip_grad_norm";

// The spellings of `lr_schedule`, as the config loader accepts them.
inline constexpr std::string_view kTrainLrScheduleChoices[] = {"constant", "step", "cosine"};

// The spellings of `precision`, as the config loader accepts them.
inline constexpr std::string_view kTrainPrecisionChoices[] = {"fp32", "fp16", "bf16"};

struct TrainNodeKey {
  std::string_view name;
  ParamType type;
  std::optional<double> min;  // inclusive; the config loader's own bound where it has one
  std::optional<double> max;
  std::span<const std::string_view> choices;
  std::string_view doc;
};

inline constexpr TrainNodeKey kTrainNodeKeys[] = {
    {kTrainPrecision, ParamType::kString, {}, {}, kTrainPrecisionChoices, "compute precision"},
    {kTrainEpochs, ParamType::kInt, 1, 1'000'000, {}, "passes over the data"},
    {kTrainMicroBatch, ParamType::kIntOrAuto, 1, 1e9, {}, "samples per micro-batch, or auto"},
    {kTrainAccumulate, ParamType::kInt, 1, 1e6, {}, "micro-batches per optimizer step"},
    // A sweep is one job graph: train nodes that differ in these (each keeps its own
    // checkpoints in its node directory, so the runs never meet).
    {kTrainLr, ParamType::kFloat, {}, {}, {}, "learning rate (positive)"},
    {kTrainWeightDecay, ParamType::kFloat, 0, {}, {}, "weight decay"},
    {kTrainSeed, ParamType::kInt, 0, 9.0e15, {}, "seed of the split, the shuffles and the weights"},
    {kTrainLrSchedule, ParamType::kString, {}, {}, kTrainLrScheduleChoices, "learning-rate schedule"},
    {kTrainWarmupSteps, ParamType::kInt, 0, 1e12, {}, "steps of linear warmup"},
    {kTrainClipGradNorm, ParamType::kFloat, 0, {}, {}, "clip the gradients' L2 norm to this (0: off)"},
};

}  // namespace coupler::ops
