// Quantizing float values to the INT8 levels runtime/ops/int8_model.h describes: round to
// nearest (ties to even) of value / scale, clamped to [-127, 127] (s8) or [0, 255] (u8), NaN to
// 0. Every batch of INT8 inference passes each layer's input through here, so the loops have an
// AVX-512 path (picked at run time; the binary is built for baseline x86-64) that gives the same
// bits as the plain loop: one float operation per step, rounded alike.
#pragma once

#include <cstddef>
#include <span>

#include "runtime/ops/int8_model.h"

namespace coupler::ops {

// out[i] = the level of x[i] at `scale`; out is int8_t storage when is_signed, else uint8_t.
void QuantizeValues(std::span<const float> x, float scale, bool is_signed, void* out);

// QuantizeValues with quant's scale and range.
void QuantizeActivations(std::span<const float> x, const ActivationQuant& quant, void* out);

// A hidden layer's epilogue and the next layer's input in one pass: for c, rows x cols
// row-major (the layer's product), out = QuantizeActivations(relu(c + bias), quant). Each step
// is the float operation kernels::AddBiasActivate and QuantizeActivations do apart (the add, the
// ReLU that passes NaN, the multiply by 1 / scale), so the levels are theirs bit for bit; the
// pass saves writing the layer's output back and reading it again.
void QuantizeBiasRelu(std::span<const float> c, size_t cols, std::span<const float> bias,
                      const ActivationQuant& quant, void* out);

// For tests: take the plain loop even on an AVX-512 CPU, so both paths are checked on one
// machine. Not for production use (it is a process-wide switch).
void UsePlainLoopForTesting(bool plain);

}  // namespace coupler::ops
