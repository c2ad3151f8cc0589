// A trained MLP as the loose ops that score it read it (evaluate, quantize): model.json and
// weights.npy from a train node's directory, the rows of a shard that coupler train held out
// (or trained on), and those rows as the feature matrix and labels the forward pass takes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/io/table.h"
#include "runtime/ops/train_model.h"
#include "runtime/status.h"
#include "worker/ops/op_context.h"

namespace coupler::worker {

struct MlpModel : ops::ModelInfo {
  std::vector<float> params;  // per layer: weights (out x in, row-major), then biases (out)

  size_t num_layers() const { return layers.size() - 1; }
  // Where layer l's weights start in params (its biases follow them).
  size_t WeightOffset(size_t l) const;
};

// model.json and weights.npy of a train node's directory, checked against each other.
Result<MlpModel> LoadMlpModel(const std::string& dir, OpReport& report);

// Which rows of `shard` (indices, ascending) an op looks at: when the shard is part of the
// dataset the model was trained on, coupler train's split of it — the rows it held out, or the
// rows it trained on — reproduced from the shards' row counts; else every row.
enum class SplitSide { kHeldOut, kTrained };
struct ShardRows {
  std::vector<uint32_t> rows;
  bool split = false;  // the shard belongs to the training dataset: `rows` is one side of it
};
Result<ShardRows> RowsOfSplit(const std::string& shard, size_t shard_rows, const MlpModel& model,
                              SplitSide side, OpReport& report);

// Rows `rows` of `table` as the model's input: x (rows x features, row-major, every column but
// the label widened to float as coupler train widens them) and the labels as class indices.
// InvalidArgument naming `path`, the row and the column for a missing label column, a feature
// count the model does not take, or a label that is not one of its classes.
struct ModelRows {
  std::vector<float> x;
  std::vector<int32_t> y;
  size_t count = 0;
};
Result<ModelRows> ModelInput(const io::Table& table, const std::string& path,
                             const std::string& label, const std::vector<uint32_t>& rows,
                             const MlpModel& model);

}  // namespace coupler::worker
