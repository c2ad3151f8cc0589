// quantize: calibrates a trained MLP for INT8 inference (runtime/ops/int8_model.h). A map task
// runs the fp32 forward pass over up to `calibration_rows` of the rows coupler train trained on
// in one data shard (never the held-out rows evaluate scores) and histograms the magnitudes of
// each layer's input; the reduce merges the histograms and clips each layer at the `percentile`
// of its magnitudes — a few outliers would otherwise stretch the 256 levels over values that
// almost never occur — writing the calibration evaluate reads as its third input.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/io/shard_file.h"
#include "runtime/ops/int8_model.h"
#include "worker/ops/mlp_forward.h"
#include "worker/ops/mlp_model.h"
#include "worker/ops/ops.h"
#include "worker/ops/shard_io.h"

namespace coupler::worker {
namespace {

constexpr size_t kBins = ops::ActivationHistogram::kBins;

// Up to `limit` of `rows`, evenly spaced, so a calibration sees the whole shard.
std::vector<uint32_t> Spread(const std::vector<uint32_t>& rows, size_t limit) {
  if (rows.size() <= limit) return rows;
  std::vector<uint32_t> out(limit);
  for (size_t i = 0; i < limit; ++i) out[i] = rows[i * rows.size() / limit];
  return out;
}

Status RunMap(const OpContext& context, OpReport& report) {
  const char* const kInputs = "[data shard, model]";
  COUPLER_ASSIGN_OR_RETURN(const std::string input, InputPath(context, 0, kInputs));
  COUPLER_ASSIGN_OR_RETURN(const std::string model_dir, InputPath(context, 1, kInputs));
  COUPLER_ASSIGN_OR_RETURN(const std::string output, OutputPath(context));
  COUPLER_ASSIGN_OR_RETURN(const MlpModel model, LoadMlpModel(model_dir, report));
  COUPLER_ASSIGN_OR_RETURN(const int64_t limit,
                           context.spec.params.Get<int64_t>("calibration_rows"));
  COUPLER_ASSIGN_OR_RETURN(const std::optional<std::string> label_param,
                           context.spec.params.Optional<std::string>("label_column"));
  const std::string label = label_param.value_or(model.label_column);
  COUPLER_ASSIGN_OR_RETURN(const io::Table table, ReadShard(input, report));
  report.rows_in = table.rows();
  COUPLER_ASSIGN_OR_RETURN(const ShardRows rows, RowsOfSplit(input, table.rows(), model,
                                                             SplitSide::kTrained, report));
  COUPLER_ASSIGN_OR_RETURN(
      const ModelRows model_input,
      ModelInput(table, input, label, Spread(rows.rows, static_cast<size_t>(limit)), model));
  if (context.Cancelled()) return Cancelled();

  std::vector<ops::ActivationHistogram> histograms(model.num_layers());
  if (model_input.count > 0) {
    KernelTimer timer(report.kernel_ms);
    COUPLER_ASSIGN_OR_RETURN(const MlpForward forward,
                             MlpForward::Prepare(model, InferencePrecision::kFp32, nullptr));
    std::vector<float> logits;
    COUPLER_RETURN_IF_ERROR(forward.Run(model_input.x, model_input.count, logits, report,
                                        [&](size_t layer, std::span<const float> values) {
                                          histograms[layer].Add(values);
                                        }));
  }
  // Long form: layer l's bins are rows l * kBins ..; its flags repeat on each of them.
  std::vector<int32_t> layer;
  std::vector<double> count, negative;
  for (size_t l = 0; l < histograms.size(); ++l) {
    for (size_t b = 0; b < kBins; ++b) {
      layer.push_back(static_cast<int32_t>(l));
      count.push_back(histograms[l].counts()[b]);
      negative.push_back(histograms[l].saw_negative() ? 1.0 : 0.0);
    }
  }
  const size_t n = layer.size();
  int64_t hash_bits = 0;
  const uint64_t hash = ops::WeightsHash(model.params);
  std::memcpy(&hash_bits, &hash, sizeof(hash_bits));
  io::Table partial;
  COUPLER_RETURN_IF_ERROR(partial.AddColumn(io::Column::Int32("layer", std::move(layer))));
  COUPLER_RETURN_IF_ERROR(partial.AddColumn(io::Column::Float64("count", std::move(count))));
  COUPLER_RETURN_IF_ERROR(partial.AddColumn(io::Column::Float64("negative", std::move(negative))));
  COUPLER_RETURN_IF_ERROR(partial.AddColumn(
      io::Column::Float64("rows", std::vector<double>(n, double(model_input.count)))));
  COUPLER_RETURN_IF_ERROR(
      partial.AddColumn(io::Column::Int64("weights_hash", std::vector<int64_t>(n, hash_bits))));
  std::vector<int64_t> widths(n);
  for (size_t r = 0; r < n; ++r) widths[r] = static_cast<int64_t>(model.layers[r / kBins]);
  COUPLER_RETURN_IF_ERROR(partial.AddColumn(io::Column::Int64("inputs", std::move(widths))));
  report.rows_out = partial.rows();
  return WriteShard(output, std::move(partial), report);
}

Status RunReduce(const OpContext& context, OpReport& report) {
  COUPLER_ASSIGN_OR_RETURN(const std::string output, OutputPath(context));
  COUPLER_ASSIGN_OR_RETURN(const double percentile,
                           context.spec.params.Get<double>("percentile"));
  std::vector<ops::ActivationHistogram> histograms;
  std::vector<size_t> widths;
  double rows = 0;
  std::optional<int64_t> hash;
  COUPLER_RETURN_IF_ERROR(ForEachPartial(
      context, report, "calibration histograms",
      [&](size_t, const std::string& path, const io::Table& table) -> Status {
        const io::Column* layer = table.Find("layer");
        const io::Column* count = table.Find("count");
        const io::Column* negative = table.Find("negative");
        const io::Column* shard_rows = table.Find("rows");
        const io::Column* weights = table.Find("weights_hash");
        const io::Column* inputs = table.Find("inputs");
        const bool ok = layer != nullptr && layer->dtype() == ElementType::kInt32 &&
                        count != nullptr && count->dtype() == ElementType::kFloat64 &&
                        negative != nullptr && negative->dtype() == ElementType::kFloat64 &&
                        shard_rows != nullptr && shard_rows->dtype() == ElementType::kFloat64 &&
                        weights != nullptr && weights->dtype() == ElementType::kInt64 &&
                        inputs != nullptr && inputs->dtype() == ElementType::kInt64 &&
                        table.rows() > 0 && table.rows() % kBins == 0;
        if (!ok) return InvalidArgument(path + ": not a quantize partial (has " + table.Describe() + ")");
        const size_t layers = table.rows() / kBins;
        if (!hash) {
          hash = weights->values<int64_t>()[0];
          histograms.resize(layers);
          for (size_t l = 0; l < layers; ++l) {
            widths.push_back(static_cast<size_t>(inputs->values<int64_t>()[l * kBins]));
          }
        }
        if (layers != histograms.size() || weights->values<int64_t>()[0] != *hash) {
          return InvalidArgument(path + ": calibrated another model than the other partials");
        }
        rows += shard_rows->values<double>()[0];
        for (size_t l = 0; l < layers; ++l) {
          ops::ActivationHistogram h;
          for (size_t b = 0; b < kBins; ++b) {
            h.mutable_counts()[b] = count->values<double>()[l * kBins + b];
          }
          h.set_saw_negative(negative->values<double>()[l * kBins] != 0);
          histograms[l].Merge(h);
        }
        return Status::Ok();
      }));
  if (rows == 0) {
    return InvalidArgument("quantize: no training rows to calibrate on (every row of the data "
                           "was held out, or the data is empty)");
  }
  ops::Calibration calibration;
  calibration.widths = widths;
  calibration.rows = rows;
  calibration.percentile = percentile;
  std::memcpy(&calibration.weights_hash, &*hash, sizeof(uint64_t));
  for (const ops::ActivationHistogram& h : histograms) {
    calibration.layers.push_back({h.Quantile(percentile / 100.0), h.saw_negative()});
  }
  COUPLER_ASSIGN_OR_RETURN(io::Table result, ops::CalibrationTable(calibration));
  report.rows_out = result.rows();
  return WriteShard(output, std::move(result), report);
}

}  // namespace

Status RunQuantize(const OpContext& context, OpReport& report) {
  return RunMapOrReduce(context, report, &RunMap, &RunReduce);
}

}  // namespace coupler::worker
