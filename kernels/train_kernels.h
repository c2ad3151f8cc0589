// The training kernels of the data-parallel MLP: GEMM over fp32 or 16-bit operands, bias + ReLU,
// softmax cross-entropy and the optimizer updates. CPU implementations (OpenBLAS for GEMMs) live
// in kernels/cpu/; the CUDA twins (train_kernels_cuda.h) have the same signatures, and each
// backend publishes its set as one table (train_kernel_table.h). On the CPU every kernel answers
// Ok: a contract broken by the caller (shapes, null buffers) is a COUPLER_CHECK failure, as a
// programming error, where the CUDA twin answers InvalidArgument.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/precision/element_type.h"
#include "runtime/status.h"

namespace coupler::kernels {

// How a matrix's elements are stored: kFloat32, kFloat16 or kBFloat16 (ShortElementTypeName
// spells them "fp32", "fp16", "bf16"). 16-bit storage holds raw fp16/bf16 bits
// (runtime/precision/half.h); every write to it rounds to nearest even.
size_t StorageBytes(ElementType storage);  // 4 or 2; any other type is a checked error

// Row-major, densely packed (leading dimension == cols).
struct ConstMatrix {
  const void* data = nullptr;
  ElementType storage = ElementType::kFloat32;
  size_t rows = 0;
  size_t cols = 0;
};
struct MutMatrix {
  void* data = nullptr;
  ElementType storage = ElementType::kFloat32;
  size_t rows = 0;
  size_t cols = 0;
};

// The most scratch memory one Gemm call uses to widen 16-bit operands to fp32 (tiles), so a
// caller can reserve it in its memory budget. fp32-only calls use none.
inline constexpr size_t kGemmWorkspaceBytes = size_t{1} << 20;

// c = alpha * op(a) * op(b) + beta * c, op(x) = x or its transpose. Accumulates in fp32; a 16-bit
// c is rounded once per element. Shapes must agree (COUPLER_CHECK). Single-threaded OpenBLAS.
// As in BLAS, beta == 0 never reads the old c (NaN garbage there cannot leak), and c must not
// overlap a or b. The widening scratch is thread_local, allocated once per calling thread.
Status Gemm(bool trans_a, bool trans_b, float alpha, ConstMatrix a, ConstMatrix b, float beta,
            MutMatrix c);

// y[r][j] += bias[j] for every row, then max(0, .) when relu; in place, rounding to y's storage.
// NaN stays NaN through the ReLU, so a forward-pass overflow still reaches the loss.
Status AddBiasActivate(MutMatrix y, const float* bias, bool relu);

// dy[i] = 0 wherever y[i] <= 0 (y is the ReLU output kept from the forward pass); in place.
Status ReluBackward(ConstMatrix y, MutMatrix dy);

// bias_grad[j] += sum over rows of dy[r][j], in fp32.
Status BiasGradAccumulate(ConstMatrix dy, float* bias_grad);

// Softmax cross-entropy over rows of logits with integer labels in [0, cols). Writes the SUM of
// the per-row losses (double) to *loss_sum (may be null). Writes dlogits = (softmax - onehot) *
// grad_scale (rounded to its storage); dlogits may be null for evaluation. correct (may be null)
// += rows whose argmax == label (the first maximal column on ties).
Status SoftmaxCrossEntropy(ConstMatrix logits, const int32_t* labels, float grad_scale,
                           MutMatrix* dlogits, double* loss_sum, size_t* correct);

// dst[i] = src[i] rounded to `storage` (a copy for kFloat32). dst holds n elements of it.
Status RoundCopy(const float* src, void* dst, ElementType storage, size_t n);

// Widens n elements of `storage` to fp32.
Status WidenCopy(const void* src, ElementType storage, float* dst, size_t n);

// x[i] *= s.
Status Scale(float* x, size_t n, float s);

// *finite = whether every x[i] is finite (no inf, no NaN).
Status AllFinite(const float* x, size_t n, bool* finite);

// x[i] *= s, then *finite = whether every x[i] is finite.
Status UnscaleAllFinite(float* x, size_t n, float s, bool* finite);

// *sum = the sum of x[i]^2, accumulated in double (the squared L2 norm that gradient clipping
// compares). Deterministic: the same x gives the same bits on every rank.
Status SumSquares(const float* x, size_t n, double* sum);

// SGD with momentum and decoupled weight decay, on fp32 master weights:
//   v = momentum * v + g;  w -= lr * (v + weight_decay * w)
Status SgdMomentumStep(float* w, const float* g, float* v, size_t n, float lr, float momentum,
                       float weight_decay);

// AdamW (Loshchilov & Hutter), bias-corrected, step counts from 1:
//   m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2
//   w -= lr * (m / (1-b1^t) / (sqrt(v / (1-b2^t)) + eps) + weight_decay * w)
struct AdamWParams {
  float lr = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.0f;
};
Status AdamWStep(float* w, const float* g, float* m, float* v, size_t n, const AdamWParams& params,
                 int64_t step);

// ---- Host buffers, the CPU side of the device transfers of train_kernels_cuda.h ----
// Zero-fills `bytes` at dst.
Status FillZero(void* dst, size_t bytes);
// Copies `bytes`; dst == src is a no-op (the CPU backend's host and buffer memory are one).
Status CopyBytes(void* dst, const void* src, size_t bytes);

// ---- The gradient reducer's bucket math on host memory (train/comm/bucket_math.h) ----
// out[i] = in[i] / divisor; out may equal in.
Status Divide(float* out, const float* in, size_t n, float divisor);
// out[i] = in[i] * scale rounded to nearest even in `storage` (fp16 or bf16, else
// InvalidArgument); UnpackHalf widens such values back.
Status PackHalf(const float* in, float scale, uint16_t* out, size_t n, ElementType storage);
Status UnpackHalf(const uint16_t* in, float* out, size_t n, ElementType storage);

}  // namespace coupler::kernels
