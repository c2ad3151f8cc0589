// The forward pass of a trained MLP at an inference precision, weights converted once:
//   fp32 — the weights as trained (oneDNN's or OpenBLAS's sgemm);
//   bf16 — weights and each layer's input rounded to bf16, products summed in fp32 (oneDNN's
//          bf16 matmul on AVX512_BF16/AMX, else widened for OpenBLAS);
//   int8 — per-channel int8 weights and calibrated int8 activations (runtime/ops/int8_model.h),
//          products summed exactly in int32 (kernels/int8_gemm.h, a CUDA twin through RunKernel).
// Biases stay fp32 and are added, with the ReLU, to each product in fp32 at every precision.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "kernels/int8_gemm.h"
#include "runtime/ops/int8_model.h"
#include "runtime/status.h"
#include "worker/ops/mlp_model.h"
#include "worker/ops/op_context.h"

namespace coupler::worker {

// Pinned: evaluate's partial results carry the number.
enum class InferencePrecision : uint8_t { kFp32 = 0, kBf16 = 1, kInt8 = 2 };
std::string_view InferencePrecisionName(InferencePrecision precision);  // "fp32", "bf16", "int8"
std::optional<InferencePrecision> ParseInferencePrecision(std::string_view name);

class MlpForward {
 public:
  // `calibration` is required for kInt8 (and must be of this model's weights and widths).
  static Result<MlpForward> Prepare(const MlpModel& model, InferencePrecision precision,
                                    const ops::Calibration* calibration);

  // Sees layer l's input (rows x layers[l], fp32) before it is converted: what calibration
  // measures. fp32 and bf16 only: int8's hidden layers never hold their input in fp32 (each
  // layer's epilogue writes the next one's quantized input directly).
  using Observer = std::function<void(size_t layer, std::span<const float> input)>;

  // logits (rows x classes) of x (rows x features). One thread at a time: the layers' outputs
  // go through buffers kept between calls, so a steady stream of batches allocates nothing.
  Status Run(std::span<const float> x, size_t rows, std::vector<float>& logits, OpReport& report,
             const Observer& observe = nullptr) const;

  // What the weights take at this precision: matrices, biases (fp32) and int8's row scales.
  size_t WeightBytes() const;
  InferencePrecision precision() const { return precision_; }

 private:
  struct Layer {
    size_t in = 0, out = 0;
    std::vector<float> fp32;      // kFp32: out x in
    std::vector<uint16_t> bf16;   // kBf16: out x in
    kernels::Int8Weights int8;    // kInt8: out x in, scaled by the input's x each row's scale
    ops::ActivationQuant input;   // kInt8: how this layer's input is quantized
    std::vector<float> bias;
  };
  Status RunInt8(std::span<const float> x, size_t rows, std::vector<float>& logits,
                 OpReport& report) const;

  InferencePrecision precision_ = InferencePrecision::kFp32;
  std::vector<Layer> layers_;
  mutable std::vector<float> hidden_[2];
  mutable std::vector<uint16_t> input16_;
  mutable std::vector<uint8_t> input8_;  // the layer's quantized input (u8 or s8 levels)
};

}  // namespace coupler::worker
