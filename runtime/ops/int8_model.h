// What `quantize` leaves for `evaluate`, and the arithmetic both must do alike to run a trained
// MLP in INT8: per-output-channel symmetric weights (each row of a layer's out x in matrix scaled
// by its largest magnitude onto [-127, 127]) and per-tensor activations calibrated on training
// rows (each layer's input clipped at a percentile of its magnitudes, then u8 onto [0, 255]
// when it is never negative — a ReLU's output — else s8 onto [-127, 127]).
//
// The weights' quantization is a function of the fp32 weights alone, so `quantize` records only
// what needs data — each layer's clip — together with the hash of the weights it calibrated
// (evaluate refuses a calibration of other weights). Rounding is to nearest, ties to even.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "runtime/io/table.h"
#include "runtime/status.h"

namespace coupler::ops {

// Magnitudes seen at a layer's input, in log-spaced bins (32 per octave, |x| from 2^-24 to
// 2^40; smaller in bin 0, larger in the last): mergeable across map tasks by adding counts,
// fine enough (2.2% per bin) to place a clip.
class ActivationHistogram {
 public:
  static constexpr size_t kBins = 2048;
  ActivationHistogram() : counts_(kBins, 0.0) {}

  void Add(std::span<const float> values);
  void Merge(const ActivationHistogram& other);
  // The upper edge of the bin holding the q-th quantile of the magnitudes (q in (0, 1]); 0 for
  // an empty histogram or one of zeros only.
  double Quantile(double q) const;
  double total() const;
  bool saw_negative() const { return saw_negative_; }
  void set_saw_negative(bool v) { saw_negative_ = v; }
  std::span<const double> counts() const { return counts_; }
  std::span<double> mutable_counts() { return counts_; }

 private:
  std::vector<double> counts_;
  bool saw_negative_ = false;
};

// One layer's input quantization.
struct ActivationQuant {
  double clip = 0;          // magnitudes above it saturate
  bool is_signed = false;   // s8 (a value below zero was seen in calibration), else u8
  // The step between levels: clip / 127 (s8) or clip / 255 (u8); 1 when clip is 0.
  float Scale() const;
};

// A layer's weights in INT8: q (out x in, row-major) and each row's scale.
struct Int8Layer {
  std::vector<int8_t> q;
  std::vector<float> scale;
};

// Per-row symmetric quantization of an out x in matrix: scale[j] = max |w[j][.]| / 127 (1 for an
// all-zero row), q = round(w / scale) clamped to [-127, 127].
Int8Layer QuantizeWeights(std::span<const float> w, size_t out, size_t in);

// The calibration `quantize` writes: one row per layer (its input), columns layer, inputs (the
// layer's input width), clip, signed, calibration_rows, percentile and weights_hash (XXH64 of
// weights.npy's float32 values, as int64 bits).
struct Calibration {
  std::vector<ActivationQuant> layers;
  std::vector<size_t> widths;  // each layer's input width
  double rows = 0;
  double percentile = 0;
  uint64_t weights_hash = 0;
};
Result<io::Table> CalibrationTable(const Calibration& calibration);
// InvalidArgument naming `path` for a table `quantize` would not have written.
Result<Calibration> ReadCalibration(const io::Table& table, const std::string& path);

// XXH64 of a model's float32 weights, the identity a calibration is tied to.
uint64_t WeightsHash(std::span<const float> params);

}  // namespace coupler::ops
