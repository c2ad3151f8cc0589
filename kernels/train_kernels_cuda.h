// CUDA twins of the training kernels of train_kernels.h, declared without CUDA headers. Every
// pointer is DEVICE memory on the calling thread's current device, except the *_host outputs.
// Kernels are enqueued on the default stream and not waited for: a fault inside one surfaces at
// the next synchronizing call. Functions with *_host outputs synchronize. Defined in
// kernels/cuda/train_*.cu, only in a build with CUDA: other code reaches them through the CUDA
// table of train_kernel_table.h.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/train_kernels.h"
#include "runtime/status.h"

namespace coupler::kernels {

// Same contracts as the CPU twins in train_kernels.h; shape mismatches are InvalidArgument.
Status AddBiasActivateCuda(MutMatrix y, const float* bias, bool relu);
Status ReluBackwardCuda(ConstMatrix y, MutMatrix dy);
Status BiasGradAccumulateCuda(ConstMatrix dy, float* bias_grad);

// Writes the SUM of the per-row losses to *loss_sum_host (summed on the host in row order, as
// the CPU twin) and adds the rows whose argmax == label to *correct_host (either may be null).
// dlogits may be null. A label outside [0, cols) is InvalidArgument (dlogits then unspecified).
// NaN logits give a NaN loss as on the CPU; the argmax of such a row may differ from the CPU's.
Status SoftmaxCrossEntropyCuda(ConstMatrix logits, const int32_t* labels, float grad_scale,
                               MutMatrix* dlogits, double* loss_sum_host, size_t* correct_host);

Status RoundCopyCuda(const float* src, void* dst, ElementType storage, size_t n);
Status WidenCopyCuda(const void* src, ElementType storage, float* dst, size_t n);
Status ScaleCuda(float* x, size_t n, float s);
Status AllFiniteCuda(const float* x, size_t n, bool* finite_host);
// x[i] *= s, then whether every x[i] is finite: one pass over x (Scale + AllFinite fused).
Status UnscaleAllFiniteCuda(float* x, size_t n, float s, bool* finite_host);
// The sum of x[i]^2 in double: per-block partials in a fixed order, added on the host in block
// order, so the result does not depend on timing (it may differ from the CPU's in the last
// bits: the additions are grouped differently).
Status SumSquaresCuda(const float* x, size_t n, double* sum_host);

// The optimizer steps of train_kernels.h. When compute_copy is non-null, it also receives the
// updated weights rounded to `storage` (n elements), in the same pass.
Status SgdMomentumStepCuda(float* w, const float* g, float* v, size_t n, float lr, float momentum,
                           float weight_decay, void* compute_copy = nullptr,
                           ElementType storage = ElementType::kFloat32);
Status AdamWStepCuda(float* w, const float* g, float* m, float* v, size_t n,
                     const AdamWParams& params, int64_t step, void* compute_copy = nullptr,
                     ElementType storage = ElementType::kFloat32);

// ---- Moving and filling training buffers (kernels/cuda/train_transfer_cuda.cu) --------------
// Blocking copies between host memory and device memory, and a zero fill of device memory.
Status CopyHostToDeviceCuda(void* dst, const void* src, size_t bytes);
Status CopyDeviceToHostCuda(void* dst, const void* src, size_t bytes);
Status FillZeroCuda(void* dst, size_t bytes);

// The gradient reducer's bucket math on device memory, the same per-element operations as its
// host path (train/comm/bucket_math.cc): out[i] = in[i] / divisor (out may equal in); packing
// to 16-bit wire values out[i] = round(in[i] * scale) in `storage` (fp16 or bf16, else
// InvalidArgument); widening them back.
Status DivideCuda(float* out, const float* in, size_t n, float divisor);
Status PackHalfCuda(const float* in, float scale, uint16_t* out, size_t n, ElementType storage);
Status UnpackHalfCuda(const uint16_t* in, float* out, size_t n, ElementType storage);

}  // namespace coupler::kernels
