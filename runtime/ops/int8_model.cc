#include "runtime/ops/int8_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string_view>

#include "runtime/io/content_hash.h"
#include "runtime/ops/activation_quantize.h"

namespace coupler::ops {
namespace {

constexpr int kBinsPerOctave = 32;
constexpr int kLowestOctave = -24;  // bin 0 holds everything below 2^-24, zeros included

size_t BinOf(float magnitude) {
  if (!(magnitude >= std::ldexp(1.0f, kLowestOctave))) return 0;  // NaN, zeros, tiny values
  if (std::isinf(magnitude)) return ActivationHistogram::kBins - 1;
  const double position = (std::log2(static_cast<double>(magnitude)) - kLowestOctave) *
                          kBinsPerOctave;
  return std::min<size_t>(static_cast<size_t>(position) + 1, ActivationHistogram::kBins - 1);
}

double UpperEdge(size_t bin) {
  if (bin == 0) return std::ldexp(1.0, kLowestOctave);
  return std::exp2(static_cast<double>(bin) / kBinsPerOctave + kLowestOctave);
}

}  // namespace

void ActivationHistogram::Add(std::span<const float> values) {
  for (const float v : values) {
    if (v < 0) saw_negative_ = true;
    counts_[BinOf(std::fabs(v))] += 1;
  }
}

void ActivationHistogram::Merge(const ActivationHistogram& other) {
  for (size_t b = 0; b < kBins; ++b) counts_[b] += other.counts_[b];
  saw_negative_ = saw_negative_ || other.saw_negative_;
}

double ActivationHistogram::total() const {
  double sum = 0;
  for (const double c : counts_) sum += c;
  return sum;
}

double ActivationHistogram::Quantile(double q) const {
  const double all = total();
  if (all <= counts_[0]) return 0;  // nothing above the smallest bin: zeros
  const double wanted = std::clamp(q, 0.0, 1.0) * all;
  double seen = 0;
  for (size_t b = 0; b < kBins; ++b) {
    seen += counts_[b];
    if (seen >= wanted && counts_[b] > 0) return UpperEdge(b);
  }
  return UpperEdge(kBins - 1);
}

float ActivationQuant::Scale() const {
  if (!(clip > 0)) return 1.0f;
  return static_cast<float>(clip / (is_signed ? 127.0 : 255.0));
}

Int8Layer QuantizeWeights(std::span<const float> w, size_t out, size_t in) {
  Int8Layer layer;
  layer.q.resize(out * in);
  layer.scale.resize(out);
  for (size_t j = 0; j < out; ++j) {
    const std::span<const float> row = w.subspan(j * in, in);
    float largest = 0;
    for (const float v : row) largest = std::max(largest, std::fabs(v));
    const float scale = largest > 0 ? largest / 127.0f : 1.0f;
    layer.scale[j] = scale;
    QuantizeValues(row, scale, /*is_signed=*/true, layer.q.data() + j * in);
  }
  return layer;
}

uint64_t WeightsHash(std::span<const float> params) {
  return io::Xxh64(std::string_view(reinterpret_cast<const char*>(params.data()),
                                    params.size() * sizeof(float)));
}

Result<io::Table> CalibrationTable(const Calibration& calibration) {
  const size_t n = calibration.layers.size();
  if (calibration.widths.size() != n) return InvalidArgument("calibration: widths do not match");
  std::vector<int32_t> layer(n), is_signed(n);
  std::vector<int64_t> inputs(n), hash(n);
  std::vector<double> clip(n), rows(n, calibration.rows), percentile(n, calibration.percentile);
  int64_t hash_bits = 0;
  std::memcpy(&hash_bits, &calibration.weights_hash, sizeof(hash_bits));
  for (size_t l = 0; l < n; ++l) {
    layer[l] = static_cast<int32_t>(l);
    inputs[l] = static_cast<int64_t>(calibration.widths[l]);
    clip[l] = calibration.layers[l].clip;
    is_signed[l] = calibration.layers[l].is_signed ? 1 : 0;
    hash[l] = hash_bits;
  }
  io::Table table;
  COUPLER_RETURN_IF_ERROR(table.AddColumn(io::Column::Int32("layer", std::move(layer))));
  COUPLER_RETURN_IF_ERROR(table.AddColumn(io::Column::Int64("inputs", std::move(inputs))));
  COUPLER_RETURN_IF_ERROR(table.AddColumn(io::Column::Float64("clip", std::move(clip))));
  COUPLER_RETURN_IF_ERROR(table.AddColumn(io::Column::Int32("signed", std::move(is_signed))));
  COUPLER_RETURN_IF_ERROR(table.AddColumn(io::Column::Float64("calibration_rows", std::move(rows))));
  COUPLER_RETURN_IF_ERROR(table.AddColumn(io::Column::Float64("percentile", std::move(percentile))));
  COUPLER_RETURN_IF_ERROR(table.AddColumn(io::Column::Int64("weights_hash", std::move(hash))));
  return table;
}

Result<Calibration> ReadCalibration(const io::Table& table, const std::string& path) {
  auto column = [&](const char* name, ElementType type) -> Result<const io::Column*> {
    const io::Column* c = table.Find(name);
    if (c == nullptr || c->dtype() != type) {
      return InvalidArgument(path + ": not a quantize calibration (no " +
                             std::string(ElementTypeName(type)) + " column '" + name +
                             "'; has " + table.Describe() + ")");
    }
    return c;
  };
  COUPLER_ASSIGN_OR_RETURN(const io::Column* layer, column("layer", ElementType::kInt32));
  COUPLER_ASSIGN_OR_RETURN(const io::Column* inputs, column("inputs", ElementType::kInt64));
  COUPLER_ASSIGN_OR_RETURN(const io::Column* clip, column("clip", ElementType::kFloat64));
  COUPLER_ASSIGN_OR_RETURN(const io::Column* is_signed, column("signed", ElementType::kInt32));
  COUPLER_ASSIGN_OR_RETURN(const io::Column* rows, column("calibration_rows", ElementType::kFloat64));
  COUPLER_ASSIGN_OR_RETURN(const io::Column* percentile, column("percentile", ElementType::kFloat64));
  COUPLER_ASSIGN_OR_RETURN(const io::Column* hash, column("weights_hash", ElementType::kInt64));
  Calibration calibration;
  if (table.rows() == 0) return InvalidArgument(path + ": a calibration without layers");
  for (size_t l = 0; l < table.rows(); ++l) {
    const double c = clip->values<double>()[l];
    if (layer->values<int32_t>()[l] != static_cast<int32_t>(l) || !(c >= 0) || std::isinf(c) ||
        inputs->values<int64_t>()[l] <= 0) {
      return InvalidArgument(path + ": row " + std::to_string(l) + " is not layer " +
                             std::to_string(l) + "'s calibration");
    }
    calibration.layers.push_back({c, is_signed->values<int32_t>()[l] != 0});
    calibration.widths.push_back(static_cast<size_t>(inputs->values<int64_t>()[l]));
  }
  calibration.rows = rows->values<double>()[0];
  calibration.percentile = percentile->values<double>()[0];
  std::memcpy(&calibration.weights_hash, &hash->values<int64_t>()[0], sizeof(uint64_t));
  return calibration;
}

}  // namespace coupler::ops
