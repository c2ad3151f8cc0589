#include "worker/ops/mlp_forward.h"

#include <string>

#include "kernels/int8_gemm.h"
#include "kernels/train_kernels.h"
#include "runtime/ops/activation_quantize.h"
#include "runtime/precision/half.h"

namespace coupler::worker {

std::string_view InferencePrecisionName(InferencePrecision precision) {
  switch (precision) {
    case InferencePrecision::kFp32: return "fp32";
    case InferencePrecision::kBf16: return "bf16";
    case InferencePrecision::kInt8: return "int8";
  }
  return "?";
}

std::optional<InferencePrecision> ParseInferencePrecision(std::string_view name) {
  for (const auto p : {InferencePrecision::kFp32, InferencePrecision::kBf16,
                       InferencePrecision::kInt8}) {
    if (InferencePrecisionName(p) == name) return p;
  }
  return std::nullopt;
}

Result<MlpForward> MlpForward::Prepare(const MlpModel& model, InferencePrecision precision,
                                       const ops::Calibration* calibration) {
  MlpForward forward;
  forward.precision_ = precision;
  const size_t n = model.num_layers();
  if (precision == InferencePrecision::kInt8) {
    if (calibration == nullptr) {
      return InvalidArgument("int8 needs a calibration: give evaluate a quantize node's output "
                             "as its third input");
    }
    std::vector<size_t> widths(model.layers.begin(), model.layers.end() - 1);
    if (calibration->widths != widths) {
      return InvalidArgument("the calibration is of a model with other layer widths");
    }
    if (calibration->weights_hash != ops::WeightsHash(model.params)) {
      return InvalidArgument("the calibration was measured on other weights (its quantize node "
                             "read another train node, or the model was retrained since)");
    }
  }
  for (size_t l = 0; l < n; ++l) {
    Layer layer;
    layer.in = model.layers[l];
    layer.out = model.layers[l + 1];
    const float* w = model.params.data() + model.WeightOffset(l);
    const std::span<const float> weights(w, layer.in * layer.out);
    layer.bias.assign(w + layer.in * layer.out, w + layer.in * layer.out + layer.out);
    switch (precision) {
      case InferencePrecision::kFp32:
        layer.fp32.assign(weights.begin(), weights.end());
        break;
      case InferencePrecision::kBf16:
        layer.bf16.resize(weights.size());
        for (size_t i = 0; i < weights.size(); ++i) {
          layer.bf16[i] = precision::FloatToBf16Bits(weights[i]);
        }
        break;
      case InferencePrecision::kInt8: {
        ops::Int8Layer q = ops::QuantizeWeights(weights, layer.out, layer.in);
        layer.input = calibration->layers[l];
        const float activation = layer.input.Scale();
        std::vector<float> scale(layer.out);
        for (size_t j = 0; j < layer.out; ++j) scale[j] = activation * q.scale[j];
        layer.int8 = kernels::Int8Weights(std::move(q.q), layer.out, layer.in, std::move(scale));
        break;
      }
    }
    forward.layers_.push_back(std::move(layer));
  }
  return forward;
}

size_t MlpForward::WeightBytes() const {
  size_t bytes = 0;
  for (const Layer& layer : layers_) {
    bytes += layer.fp32.size() * sizeof(float) + layer.bf16.size() * sizeof(uint16_t) +
             layer.int8.q().size() + layer.int8.scale().size() * sizeof(float) +
             layer.bias.size() * sizeof(float);
  }
  return bytes;
}

Status MlpForward::Run(std::span<const float> x, size_t rows, std::vector<float>& logits,
                       OpReport& report, const Observer& observe) const {
  if (precision_ == InferencePrecision::kInt8) {
    if (observe) return InvalidArgument("an int8 forward cannot be observed: calibrate in fp32");
    return RunInt8(x, rows, logits, report);
  }
  std::span<const float> h = x;
  for (size_t l = 0; l < layers_.size(); ++l) {
    const Layer& layer = layers_[l];
    if (observe) observe(l, h);
    std::vector<float>& next = l + 1 == layers_.size() ? logits : hidden_[l % 2];
    next.resize(rows * layer.out);
    const kernels::MutMatrix c{next.data(), ElementType::kFloat32, rows, layer.out};
    if (precision_ == InferencePrecision::kFp32) {
      const kernels::ConstMatrix a{h.data(), ElementType::kFloat32, rows, layer.in};
      const kernels::ConstMatrix w{layer.fp32.data(), ElementType::kFloat32, layer.out, layer.in};
      COUPLER_RETURN_IF_ERROR(kernels::Gemm(false, true, 1.0f, a, w, 0.0f, c));
    } else {
      input16_.resize(h.size());
      COUPLER_RETURN_IF_ERROR(
          kernels::RoundCopy(h.data(), input16_.data(), ElementType::kBFloat16, h.size()));
      const kernels::ConstMatrix a{input16_.data(), ElementType::kBFloat16, rows, layer.in};
      const kernels::ConstMatrix w{layer.bf16.data(), ElementType::kBFloat16, layer.out,
                                   layer.in};
      COUPLER_RETURN_IF_ERROR(kernels::Gemm(false, true, 1.0f, a, w, 0.0f, c));
    }
    COUPLER_RETURN_IF_ERROR(
        kernels::AddBiasActivate(c, layer.bias.data(), /*relu=*/l + 1 < layers_.size()));
    h = next;
  }
  return Status::Ok();
}

// The features are quantized once; after that each hidden layer's product goes through one
// pass (bias, ReLU, the next layer's quantization: ops::QuantizeBiasRelu) straight into the next
// layer's input, the same levels as adding the bias and quantizing apart. Only the logits are
// written in fp32.
Status MlpForward::RunInt8(std::span<const float> x, size_t rows, std::vector<float>& logits,
                           OpReport& report) const {
  input8_.resize(x.size());
  ops::QuantizeActivations(x, layers_.front().input, input8_.data());
  for (size_t l = 0; l < layers_.size(); ++l) {
    const Layer& layer = layers_[l];
    const bool last = l + 1 == layers_.size();
    std::vector<float>& product = last ? logits : hidden_[0];
    product.resize(rows * layer.out);
    const kernels::Int8Activations a{input8_.data(), layer.input.is_signed, rows, layer.in};
    COUPLER_RETURN_IF_ERROR(RunKernel(report, [&](kernels::Backend backend) {
      return kernels::Int8Gemm(a, layer.int8, product, backend);
    }));
    if (last) {
      const kernels::MutMatrix c{product.data(), ElementType::kFloat32, rows, layer.out};
      COUPLER_RETURN_IF_ERROR(kernels::AddBiasActivate(c, layer.bias.data(), /*relu=*/false));
    } else {
      input8_.resize(product.size());  // the GEMM has read this layer's input
      ops::QuantizeBiasRelu(product, layer.out, layer.bias, layers_[l + 1].input, input8_.data());
    }
  }
  return Status::Ok();
}

}  // namespace coupler::worker
