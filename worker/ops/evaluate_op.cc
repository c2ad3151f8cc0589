// evaluate: a map task scores a trained MLP (a train node's directory: weights.npy, model.json)
// on one data shard, counting correct predictions; the reduce task sums the counts into the
// node's accuracy file (columns correct, total, accuracy, loss, held_out). When the shard belongs to the
// dataset the model was trained on, only its held-out rows count: coupler train's split is a
// seeded permutation of the whole dataset's rows in shard-name order, which each map task
// reproduces from the shards' row counts. The forward pass is the CPU training kernels'.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <string>
#include <system_error>
#include <vector>

#include "kernels/train_kernels.h"
#include "runtime/io/output_layout.h"
#include "runtime/io/shard_file.h"
#include "runtime/io/unique_fd.h"
#include "runtime/job/validator.h"
#include "runtime/ops/train_model.h"
#include "runtime/precision/half.h"
#include "worker/ops/ops.h"
#include "worker/ops/shard_io.h"

namespace coupler::worker {
namespace {

namespace fs = std::filesystem;

// model.json's description, and the weights.
struct Model : ops::ModelInfo {
  std::vector<float> params;  // per layer: weights (out x in, row-major), then biases (out)
};

Result<Model> LoadModel(const std::string& dir, OpReport& report) {
  const std::string info_path = (fs::path(dir) / ops::kModelInfoFile).string();
  COUPLER_ASSIGN_OR_RETURN(ops::ModelInfo info, ops::ReadModelInfo(info_path));
  Model model{std::move(info), {}};
  if (model.layers.size() < 2) return InvalidArgument(info_path + ": needs >= 2 layer widths");
  const std::string weights_path = (fs::path(dir) / "weights.npy").string();
  COUPLER_ASSIGN_OR_RETURN(io::Table weights, ReadShard(weights_path, report));
  size_t expected = 0;
  for (size_t i = 0; i + 1 < model.layers.size(); ++i) {
    expected += model.layers[i] * model.layers[i + 1] + model.layers[i + 1];
  }
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

// The rows of `shard` (in its directory's shard-name order) that coupler train held out, or
// nullopt when the shard is not part of the training dataset (then every row counts).
Result<std::optional<std::vector<uint32_t>>> HeldOutRows(const std::string& shard,
                                                         const Model& model, OpReport& report) {
  const fs::path dir = fs::path(shard).parent_path();
  std::error_code ec;
  if (!fs::equivalent(dir, model.data, ec)) return std::optional<std::vector<uint32_t>>();
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
  // coupler train's split of the whole dataset: the last entries of the permutation.
  const std::vector<uint32_t> order = ops::SeededPermutation(total, model.seed);
  const size_t held_out = ops::HeldOutCount(total, model.test_fraction);
  std::vector<uint32_t> mine;
  for (size_t i = total - held_out; i < total; ++i) {
    const size_t r = order[i];
    if (r >= first && r < first + rows) mine.push_back(static_cast<uint32_t>(r - first));
  }
  std::sort(mine.begin(), mine.end());
  return std::optional<std::vector<uint32_t>>(std::move(mine));
}

Status RunMap(const OpContext& context, OpReport& report) {
  COUPLER_ASSIGN_OR_RETURN(const std::string input, InputPath(context, 0, "[data shard, model]"));
  COUPLER_ASSIGN_OR_RETURN(const std::string model_dir, InputPath(context, 1, "[data shard, model]"));
  COUPLER_ASSIGN_OR_RETURN(const std::string output, OutputPath(context));
  COUPLER_ASSIGN_OR_RETURN(const Model model, LoadModel(model_dir, report));
  // Without the param, the label column the model was trained on.
  COUPLER_ASSIGN_OR_RETURN(const std::optional<std::string> label_param,
                           context.spec.params.Optional<std::string>("label_column"));
  const std::string label = label_param.value_or(model.label_column);
  COUPLER_ASSIGN_OR_RETURN(const io::Table table, ReadShard(input, report));
  const io::Column* labels = table.Find(label);
  if (labels == nullptr) {
    return InvalidArgument(input + ": label_column '" + label + "' is not a column (columns: " +
                           table.Describe() + ")");
  }
  if (table.num_columns() - 1 != model.layers.front()) {
    return InvalidArgument(input + ": " + std::to_string(table.num_columns() - 1) +
                           " feature columns, but the model takes " +
                           std::to_string(model.layers.front()));
  }
  COUPLER_ASSIGN_OR_RETURN(auto held_out, HeldOutRows(input, model, report));
  const bool only_held_out = held_out.has_value();
  std::vector<uint32_t> rows;
  if (held_out) {
    rows = std::move(*held_out);
  } else {
    rows.resize(table.rows());
    std::iota(rows.begin(), rows.end(), 0u);
  }
  report.rows_in = table.rows();
  if (context.Cancelled()) return Cancelled();

  const size_t m = rows.size();
  const size_t features = model.layers.front();
  std::vector<float> x(m * features);
  std::vector<int32_t> y(m);
  for (size_t i = 0; i < m; ++i) {
    size_t f = 0;
    for (const io::Column& column : table.columns()) {
      if (&column == labels) continue;
      x[i * features + f++] = ValueAt(column, rows[i]);
    }
    const float v = ValueAt(*labels, rows[i]);
    if (!(v >= 0) || v != std::trunc(v)) {
      return InvalidArgument(input + ": row " + std::to_string(rows[i]) + ", column '" + label +
                             "' is not a class index");
    }
    y[i] = static_cast<int32_t>(v);
    if (static_cast<size_t>(y[i]) >= model.layers.back()) {
      return InvalidArgument(input + ": row " + std::to_string(rows[i]) + " has label " +
                             std::to_string(y[i]) + " but the model has " +
                             std::to_string(model.layers.back()) + " classes");
    }
  }

  size_t correct = 0;
  double loss = 0;
  if (m > 0) {
    KernelTimer timer(report.kernel_ms);
    std::vector<float> h = std::move(x);
    size_t offset = 0;
    const size_t n = model.layers.size() - 1;
    for (size_t l = 0; l < n; ++l) {
      const size_t in = model.layers[l];
      const size_t out = model.layers[l + 1];
      std::vector<float> next(m * out);
      const kernels::ConstMatrix a{h.data(), ElementType::kFloat32, m, in};
      const kernels::ConstMatrix w{model.params.data() + offset, ElementType::kFloat32, out, in};
      const kernels::MutMatrix c{next.data(), ElementType::kFloat32, m, out};
      COUPLER_RETURN_IF_ERROR(kernels::Gemm(false, true, 1.0f, a, w, 0.0f, c));
      COUPLER_RETURN_IF_ERROR(kernels::AddBiasActivate(c, model.params.data() + offset + in * out,
                                                       /*relu=*/l + 1 < n));
      offset += in * out + out;
      h = std::move(next);
    }
    const kernels::ConstMatrix logits{h.data(), ElementType::kFloat32, m, model.layers.back()};
    COUPLER_RETURN_IF_ERROR(
        kernels::SoftmaxCrossEntropy(logits, y.data(), 1.0f, nullptr, &loss, &correct));
  }
  io::Table partial;
  COUPLER_RETURN_IF_ERROR(partial.AddColumn(io::Column::Float64("correct", {double(correct)})));
  COUPLER_RETURN_IF_ERROR(partial.AddColumn(io::Column::Float64("total", {double(m)})));
  COUPLER_RETURN_IF_ERROR(partial.AddColumn(io::Column::Float64("loss_sum", {loss})));
  COUPLER_RETURN_IF_ERROR(
      partial.AddColumn(io::Column::Float64("held_out", {only_held_out ? 1.0 : 0.0})));
  report.rows_out = 1;
  return WriteShard(output, std::move(partial), report);
}

Status RunReduce(const OpContext& context, OpReport& report) {
  COUPLER_ASSIGN_OR_RETURN(const std::string output, OutputPath(context));
  double correct = 0;
  double total = 0;
  double loss = 0;
  double held_out = 0;  // partials that counted only held-out rows
  COUPLER_RETURN_IF_ERROR(ForEachPartial(
      context, report, "partial results",
      [&](size_t, const std::string& path, const io::Table& table) -> Status {
        double* sums[] = {&correct, &total, &loss, &held_out};
        const char* names[] = {"correct", "total", "loss_sum", "held_out"};
        for (size_t i = 0; i < 4; ++i) {
          const io::Column* column = table.Find(names[i]);
          if (column == nullptr || column->dtype() != ElementType::kFloat64 || table.rows() != 1) {
            return InvalidArgument(path + ": not an evaluate partial (has " + table.Describe() +
                                   ")");
          }
          *sums[i] += column->values<double>()[0];
        }
        return Status::Ok();
      }));
  const size_t partials = context.spec.input_paths.size();
  io::Table result;
  COUPLER_RETURN_IF_ERROR(result.AddColumn(io::Column::Float64("correct", {correct})));
  COUPLER_RETURN_IF_ERROR(result.AddColumn(io::Column::Float64("total", {total})));
  COUPLER_RETURN_IF_ERROR(
      result.AddColumn(io::Column::Float64("accuracy", {total > 0 ? correct / total : 0.0})));
  COUPLER_RETURN_IF_ERROR(
      result.AddColumn(io::Column::Float64("loss", {total > 0 ? loss / total : 0.0})));
  // 1 when every shard counted only the rows training held out.
  const double all_held_out = held_out == static_cast<double>(partials) ? 1.0 : 0.0;
  COUPLER_RETURN_IF_ERROR(result.AddColumn(io::Column::Float64("held_out", {all_held_out})));
  report.rows_out = 1;
  return WriteShard(output, std::move(result), report);
}

}  // namespace

Status RunEvaluate(const OpContext& context, OpReport& report) {
  return RunMapOrReduce(context, report, &RunMap, &RunReduce);
}

}  // namespace coupler::worker
