// evaluate: a map task scores a trained MLP (a train node's directory: weights.npy, model.json)
// on one data shard at each precision asked for — fp32, bf16, and int8 with a quantize node's
// calibration as the third input (worker/ops/mlp_forward.h) — counting correct predictions and
// timing the forward pass; the reduce sums them into the node's accuracy file, one row per
// precision in the order asked (columns precision, correct, total, accuracy, loss, held_out,
// samples_per_s, weight_bytes; the first row is what `coupler run` calls the accuracy). When
// the shard belongs to the dataset the model was trained on, only its held-out rows count
// (worker/ops/mlp_model.h).
//
// samples_per_s is the forward pass's steady rate on one worker: rows go through in batches of
// kBatchRows (the last padded, so every batch has one shape), and a first batch runs untimed,
// so what a deployed model pays once — oneDNN building its kernels for a shape — is not counted.
#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kernels/train_kernels.h"
#include "runtime/io/shard_file.h"
#include "runtime/ops/int8_model.h"
#include "worker/ops/mlp_forward.h"
#include "worker/ops/mlp_model.h"
#include "worker/ops/ops.h"
#include "worker/ops/shard_io.h"

namespace coupler::worker {
namespace {

constexpr size_t kBatchRows = 1024;

// The precisions param, in its order; fp32 alone by default, fp32, bf16 and int8 when a
// calibration is given.
Result<std::vector<InferencePrecision>> Precisions(const OpContext& context, bool calibrated) {
  COUPLER_ASSIGN_OR_RETURN(const std::optional<std::vector<std::string>> names,
                           context.spec.params.Optional<std::vector<std::string>>("precisions"));
  if (!names) {
    if (!calibrated) return std::vector<InferencePrecision>{InferencePrecision::kFp32};
    return std::vector<InferencePrecision>{InferencePrecision::kFp32, InferencePrecision::kBf16,
                                           InferencePrecision::kInt8};
  }
  std::vector<InferencePrecision> out;
  for (const std::string& name : *names) {
    const std::optional<InferencePrecision> p = ParseInferencePrecision(name);
    if (!p) return InvalidArgument("precisions: '" + name + "' is not fp32, bf16 or int8");
    if (std::find(out.begin(), out.end(), *p) != out.end()) {
      return InvalidArgument("precisions: '" + name + "' is listed twice");
    }
    out.push_back(*p);
  }
  return out;
}

struct Score {
  size_t correct = 0;
  double loss = 0;
  double seconds = 0;
};

// Scores `input` with `forward`, batch by batch (see the file comment).
Result<Score> ScoreRows(const MlpForward& forward, const ModelRows& input, size_t features,
                        size_t classes, OpReport& report) {
  Score score;
  const size_t m = input.count;
  if (m == 0) return score;
  const size_t batch = std::min(kBatchRows, m);
  std::vector<float> x(batch * features);
  std::vector<float> logits;
  auto run_batch = [&](size_t start) -> Result<size_t> {
    const size_t count = std::min(batch, m - start);
    std::copy_n(input.x.begin() + start * features, count * features, x.begin());
    std::fill(x.begin() + count * features, x.end(), 0.0f);  // padding rows, not scored
    COUPLER_RETURN_IF_ERROR(forward.Run(x, batch, logits, report));
    return count;
  };
  COUPLER_RETURN_IF_ERROR(run_batch(0).status());  // warm-up, untimed
  for (size_t start = 0; start < m; start += batch) {
    const auto began = std::chrono::steady_clock::now();
    COUPLER_ASSIGN_OR_RETURN(const size_t count, run_batch(start));
    score.seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    const kernels::ConstMatrix scored{logits.data(), ElementType::kFloat32, count, classes};
    double loss = 0;
    COUPLER_RETURN_IF_ERROR(kernels::SoftmaxCrossEntropy(scored, input.y.data() + start, 1.0f,
                                                         nullptr, &loss, &score.correct));
    score.loss += loss;
  }
  return score;
}

Status RunMap(const OpContext& context, OpReport& report) {
  const char* const kInputs = "[data shard, model] or [data shard, model, calibration]";
  COUPLER_ASSIGN_OR_RETURN(const std::string input, InputPath(context, 0, kInputs));
  COUPLER_ASSIGN_OR_RETURN(const std::string model_dir, InputPath(context, 1, kInputs));
  COUPLER_ASSIGN_OR_RETURN(const std::string output, OutputPath(context));
  COUPLER_ASSIGN_OR_RETURN(const MlpModel model, LoadMlpModel(model_dir, report));
  std::optional<ops::Calibration> calibration;
  if (context.spec.input_paths.size() > 2) {
    COUPLER_ASSIGN_OR_RETURN(const std::string path, InputPath(context, 2, kInputs));
    COUPLER_ASSIGN_OR_RETURN(const io::Table table, ReadShard(path, report));
    COUPLER_ASSIGN_OR_RETURN(calibration, ops::ReadCalibration(table, path));
  }
  COUPLER_ASSIGN_OR_RETURN(const std::vector<InferencePrecision> precisions,
                           Precisions(context, calibration.has_value()));
  // Without the param, the label column the model was trained on.
  COUPLER_ASSIGN_OR_RETURN(const std::optional<std::string> label_param,
                           context.spec.params.Optional<std::string>("label_column"));
  const std::string label = label_param.value_or(model.label_column);
  COUPLER_ASSIGN_OR_RETURN(const io::Table table, ReadShard(input, report));
  report.rows_in = table.rows();
  COUPLER_ASSIGN_OR_RETURN(const ShardRows rows, RowsOfSplit(input, table.rows(), model,
                                                             SplitSide::kHeldOut, report));
  COUPLER_ASSIGN_OR_RETURN(const ModelRows model_input,
                           ModelInput(table, input, label, rows.rows, model));
  if (context.Cancelled()) return Cancelled();

  std::vector<int32_t> code;
  std::vector<double> correct, total, loss, held_out, seconds, weight_bytes;
  for (const InferencePrecision precision : precisions) {
    Result<MlpForward> forward = MlpForward::Prepare(
        model, precision, calibration ? &*calibration : nullptr);
    if (!forward.ok()) {
      return forward.status().WithContext(std::string(InferencePrecisionName(precision)));
    }
    KernelTimer timer(report.kernel_ms);
    COUPLER_ASSIGN_OR_RETURN(const Score score,
                             ScoreRows(*forward, model_input, model.layers.front(),
                                       model.layers.back(), report));
    code.push_back(static_cast<int32_t>(precision));
    correct.push_back(static_cast<double>(score.correct));
    total.push_back(static_cast<double>(model_input.count));
    loss.push_back(score.loss);
    held_out.push_back(rows.split ? 1.0 : 0.0);
    seconds.push_back(score.seconds);
    weight_bytes.push_back(static_cast<double>(forward->WeightBytes()));
    if (context.Cancelled()) return Cancelled();
  }
  io::Table partial;
  COUPLER_RETURN_IF_ERROR(partial.AddColumn(io::Column::Int32("precision", std::move(code))));
  COUPLER_RETURN_IF_ERROR(partial.AddColumn(io::Column::Float64("correct", std::move(correct))));
  COUPLER_RETURN_IF_ERROR(partial.AddColumn(io::Column::Float64("total", std::move(total))));
  COUPLER_RETURN_IF_ERROR(partial.AddColumn(io::Column::Float64("loss_sum", std::move(loss))));
  COUPLER_RETURN_IF_ERROR(partial.AddColumn(io::Column::Float64("held_out", std::move(held_out))));
  COUPLER_RETURN_IF_ERROR(partial.AddColumn(io::Column::Float64("seconds", std::move(seconds))));
  COUPLER_RETURN_IF_ERROR(
      partial.AddColumn(io::Column::Float64("weight_bytes", std::move(weight_bytes))));
  report.rows_out = partial.rows();
  return WriteShard(output, std::move(partial), report);
}

// One precision's sums over the partials.
struct Sums {
  double correct = 0, total = 0, loss = 0, held_out = 0, seconds = 0, weight_bytes = 0;
  size_t partials = 0;
};

Status RunReduce(const OpContext& context, OpReport& report) {
  COUPLER_ASSIGN_OR_RETURN(const std::string output, OutputPath(context));
  std::vector<int32_t> order;  // precisions, in the first partial's order
  std::map<int32_t, Sums> sums;
  COUPLER_RETURN_IF_ERROR(ForEachPartial(
      context, report, "partial results",
      [&](size_t, const std::string& path, const io::Table& table) -> Status {
        const io::Column* code = table.Find("precision");
        const char* names[] = {"correct", "total", "loss_sum", "held_out", "seconds",
                               "weight_bytes"};
        const io::Column* columns[6];
        bool ok = code != nullptr && code->dtype() == ElementType::kInt32 && table.rows() > 0;
        for (size_t i = 0; i < 6 && ok; ++i) {
          columns[i] = table.Find(names[i]);
          ok = columns[i] != nullptr && columns[i]->dtype() == ElementType::kFloat64;
        }
        if (!ok) return InvalidArgument(path + ": not an evaluate partial (has " + table.Describe() + ")");
        for (size_t r = 0; r < table.rows(); ++r) {
          const int32_t p = code->values<int32_t>()[r];
          if (!sums.contains(p)) order.push_back(p);
          Sums& s = sums[p];
          double* into[] = {&s.correct, &s.total, &s.loss, &s.held_out, &s.seconds,
                            &s.weight_bytes};
          for (size_t i = 0; i < 5; ++i) *into[i] += columns[i]->values<double>()[r];
          s.weight_bytes = columns[5]->values<double>()[r];  // the same in every partial
          ++s.partials;
        }
        return Status::Ok();
      }));
  const size_t partials = context.spec.input_paths.size();
  auto dictionary = std::make_shared<io::Column::Dictionary>();
  std::vector<int32_t> code;
  std::vector<double> correct, total, accuracy, loss, held_out, samples_per_s, weight_bytes;
  for (const int32_t p : order) {
    const Sums& s = sums[p];
    if (s.partials != partials) {
      return InvalidArgument("evaluate: precision " + std::to_string(p) + " is in " +
                             std::to_string(s.partials) + " of " + std::to_string(partials) +
                             " partial results");
    }
    code.push_back(static_cast<int32_t>(dictionary->size()));
    dictionary->push_back(
        std::string(InferencePrecisionName(static_cast<InferencePrecision>(p))));
    correct.push_back(s.correct);
    total.push_back(s.total);
    accuracy.push_back(s.total > 0 ? s.correct / s.total : 0.0);
    loss.push_back(s.total > 0 ? s.loss / s.total : 0.0);
    // 1 when every shard counted only the rows training held out.
    held_out.push_back(s.held_out == static_cast<double>(partials) ? 1.0 : 0.0);
    samples_per_s.push_back(s.seconds > 0 ? s.total / s.seconds : 0.0);
    weight_bytes.push_back(s.weight_bytes);
  }
  io::Column precision = io::Column::Int32("precision", std::move(code));
  precision.set_dictionary(std::move(dictionary));
  io::Table result;
  COUPLER_RETURN_IF_ERROR(result.AddColumn(std::move(precision)));
  COUPLER_RETURN_IF_ERROR(result.AddColumn(io::Column::Float64("correct", std::move(correct))));
  COUPLER_RETURN_IF_ERROR(result.AddColumn(io::Column::Float64("total", std::move(total))));
  COUPLER_RETURN_IF_ERROR(result.AddColumn(io::Column::Float64("accuracy", std::move(accuracy))));
  COUPLER_RETURN_IF_ERROR(result.AddColumn(io::Column::Float64("loss", std::move(loss))));
  COUPLER_RETURN_IF_ERROR(result.AddColumn(io::Column::Float64("held_out", std::move(held_out))));
  COUPLER_RETURN_IF_ERROR(
      result.AddColumn(io::Column::Float64("samples_per_s", std::move(samples_per_s))));
  COUPLER_RETURN_IF_ERROR(
      result.AddColumn(io::Column::Float64("weight_bytes", std::move(weight_bytes))));
  report.rows_out = result.rows();
  return WriteShard(output, std::move(result), report);
}

}  // namespace

Status RunEvaluate(const OpContext& context, OpReport& report) {
  return RunMapOrReduce(context, report, &RunMap, &RunReduce);
}

}  // namespace coupler::worker
