#include "worker/ops/mlp_model.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <system_error>

#include "runtime/io/output_layout.h"
#include "runtime/io/shard_file.h"
#include "runtime/precision/half.h"
#include "worker/ops/shard_io.h"

namespace coupler::worker {
namespace {

namespace fs = std::filesystem;

// The value at `row` of a column, widened to float the way coupler train widens features.
float ValueAt(const io::Column& column, size_t row) {
  switch (column.dtype()) {
    case ElementType::kFloat32: return column.values<float>()[row];
    case ElementType::kInt32: return static_cast<float>(column.values<int32_t>()[row]);
    case ElementType::kFloat64: return static_cast<float>(column.values<double>()[row]);
    case ElementType::kFloat16: return precision::HalfBitsToFloat(column.values<uint16_t>()[row]);
    case ElementType::kBFloat16: return precision::Bf16BitsToFloat(column.values<uint16_t>()[row]);
    case ElementType::kInt64:
    case ElementType::kDatetime64:
      return static_cast<float>(io::Int64AsDouble(column.values<int64_t>()[row]));
    case ElementType::kBool: return column.values<uint8_t>()[row];
  }
  return 0;
}

}  // namespace

size_t MlpModel::WeightOffset(size_t l) const {
  size_t offset = 0;
  for (size_t i = 0; i < l; ++i) offset += layers[i] * layers[i + 1] + layers[i + 1];
  return offset;
}

Result<MlpModel> LoadMlpModel(const std::string& dir, OpReport& report) {
  const std::string info_path = (fs::path(dir) / ops::kModelInfoFile).string();
  COUPLER_ASSIGN_OR_RETURN(ops::ModelInfo info, ops::ReadModelInfo(info_path));
  MlpModel model{std::move(info), {}};
  if (model.layers.size() < 2) return InvalidArgument(info_path + ": needs >= 2 layer widths");
  const std::string weights_path = (fs::path(dir) / "weights.npy").string();
  COUPLER_ASSIGN_OR_RETURN(io::Table weights, ReadShard(weights_path, report));
  const size_t expected = model.WeightOffset(model.num_layers());
  if (weights.num_columns() != 1 || weights.column(0).dtype() != ElementType::kFloat32 ||
      weights.rows() != expected) {
    return InvalidArgument(weights_path + ": expected " + std::to_string(expected) +
                           " float32 values for layers " + std::to_string(model.layers.front()) +
                           "..." + std::to_string(model.layers.back()) + ", got " +
                           std::to_string(weights.rows()) + " rows of " + weights.Describe());
  }
  model.params = std::move(weights.column(0).Vector<float>());
  return model;
}

Result<ShardRows> RowsOfSplit(const std::string& shard, size_t shard_rows, const MlpModel& model,
                              SplitSide side, OpReport& report) {
  const fs::path dir = fs::path(shard).parent_path();
  std::error_code ec;
  ShardRows out;
  if (!fs::equivalent(dir, model.data, ec)) {
    out.rows.resize(shard_rows);
    for (size_t r = 0; r < shard_rows; ++r) out.rows[r] = static_cast<uint32_t>(r);
    return out;
  }
  std::vector<std::string> files;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (io::IsShardFileName(it->path().filename().string()) && it->is_regular_file(ec)) {
      files.push_back(it->path().string());
    }
  }
  if (ec) return io::ErrnoStatus("list the directory", dir.string(), ec.value());  // EIO: retried
  std::sort(files.begin(), files.end());
  size_t total = 0;
  size_t first = 0;
  size_t rows = 0;
  bool found = false;
  for (const std::string& file : files) {
    // Only its row count is needed: an .npz's columns stay unread.
    uint64_t file_bytes = 0;
    COUPLER_ASSIGN_OR_RETURN(const io::Table table,
                             io::ReadShardFile(file, [](const io::ColumnInfo&) { return false; },
                                               &file_bytes));
    report.bytes_read += file_bytes;
    if (fs::equivalent(file, shard, ec)) {
      found = true;
      first = total;
      rows = table.rows();
    }
    total += table.rows();
  }
  if (!found) return InvalidArgument(shard + ": not among the shards of " + dir.string());
  // coupler train's split of the whole dataset: the last entries of the permutation are held out.
  const std::vector<uint32_t> order = ops::SeededPermutation(total, model.seed);
  const size_t held_out = ops::HeldOutCount(total, model.test_fraction);
  const size_t begin = side == SplitSide::kHeldOut ? total - held_out : 0;
  const size_t end = side == SplitSide::kHeldOut ? total : total - held_out;
  for (size_t i = begin; i < end; ++i) {
    const size_t r = order[i];
    if (r >= first && r < first + rows) out.rows.push_back(static_cast<uint32_t>(r - first));
  }
  std::sort(out.rows.begin(), out.rows.end());
  out.split = true;
  return out;
}

Result<ModelRows> ModelInput(const io::Table& table, const std::string& path,
                             const std::string& label, const std::vector<uint32_t>& rows,
                             const MlpModel& model) {
  const io::Column* labels = table.Find(label);
  if (labels == nullptr) {
    return InvalidArgument(path + ": label_column '" + label + "' is not a column (columns: " +
                           table.Describe() + ")");
  }
  if (table.num_columns() - 1 != model.layers.front()) {
    return InvalidArgument(path + ": " + std::to_string(table.num_columns() - 1) +
                           " feature columns, but the model takes " +
                           std::to_string(model.layers.front()));
  }
  ModelRows out;
  const size_t m = rows.size();
  const size_t features = model.layers.front();
  out.count = m;
  out.x.resize(m * features);
  out.y.resize(m);
  for (size_t i = 0; i < m; ++i) {
    size_t f = 0;
    for (const io::Column& column : table.columns()) {
      if (&column == labels) continue;
      out.x[i * features + f++] = ValueAt(column, rows[i]);
    }
    const float v = ValueAt(*labels, rows[i]);
    if (!(v >= 0) || v != std::trunc(v)) {
      return InvalidArgument(path + ": row " + std::to_string(rows[i]) + ", column '" + label +
                             "' is not a class index");
    }
    out.y[i] = static_cast<int32_t>(v);
    if (static_cast<size_t>(out.y[i]) >= model.layers.back()) {
      return InvalidArgument(path + ": row " + std::to_string(rows[i]) + " has label " +
                             std::to_string(out.y[i]) + " but the model has " +
                             std::to_string(model.layers.back()) + " classes");
    }
  }
  return out;
}

}  // namespace coupler::worker
