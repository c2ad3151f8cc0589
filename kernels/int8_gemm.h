// int8_gemm: the product of a quantized linear layer, as INT8 inference runs it.
//
//   c[i][j] = float(sum_k a[i][k] * w[j][k]) * scale[j]
//
// a is m x k activations quantized to u8 (a ReLU's output: never negative, so all 256 levels
// carry magnitude) or s8 (a first layer's standardized features); w is n x k s8 weights, a
// layer's out x in as coupler stores them; scale[j] = the activations' scale x weight row j's
// (per-channel symmetric quantization, runtime/ops/int8_model.h). The sum is exact in int32
// (k is bounded so it cannot overflow) and each element takes one int->float conversion and one
// multiply, so every backend gives the same bits: the CPU twin runs oneDNN's int8 matmul (VNNI
// or AMX) where the build has it and a plain loop elsewhere; the CUDA twin accumulates on the
// device (int32 sums, one thread per output element, tiles in shared memory).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "kernels/backend.h"
#include "runtime/status.h"

namespace coupler::kernels {

// Row-major m x k quantized activations.
struct Int8Activations {
  const void* data = nullptr;  // uint8_t when !is_signed, int8_t when is_signed
  bool is_signed = false;
  size_t rows = 0;
  size_t cols = 0;
};

// A layer's int8 weights, n x k (out x in, row-major) with their output scales, and what the CPU backend prepares from
// them on first use: oneDNN's fastest int8 kernels (AMX, VNNI brgemm) read weights in a packed
// layout of their own, and weights are fixed at inference, so the packing is paid once per
// batch shape rather than per call (measured: the plain layout runs oneDNN's slower gemm path,
// under fp32's rate). Copies share the packed forms; safe to use from several threads.
class Int8Weights {
 public:
  struct Packed;  // the CPU backend's, defined beside it

  Int8Weights() = default;
  // scale: one per row, each output column's multiplier (the activations' scale x the row's).
  Int8Weights(std::vector<int8_t> q, size_t rows, size_t cols, std::vector<float> scale);

  std::span<const int8_t> q() const { return q_; }
  std::span<const float> scale() const { return scale_; }
  size_t rows() const { return rows_; }
  size_t cols() const { return cols_; }
  Packed& packed() const { return *packed_; }

 private:
  std::vector<int8_t> q_;
  std::vector<float> scale_;
  size_t rows_ = 0;
  size_t cols_ = 0;
  std::shared_ptr<Packed> packed_;
};

// The longest inner dimension whose worst-case sum (255 x 128 per term) still fits int32.
inline constexpr size_t kInt8GemmMaxInner = 65536;

// c (m x n, row-major) as above, for w of n x a.cols. InvalidArgument for mismatched sizes, a
// null buffer or k past kInt8GemmMaxInner on either backend, before c is written; Unavailable
// for kCuda in a CPU-only build or without a device.
Status Int8Gemm(Int8Activations a, const Int8Weights& w, std::span<float> c, Backend backend);

}  // namespace coupler::kernels
