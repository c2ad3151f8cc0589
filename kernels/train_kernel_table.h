// The training kernels of one backend as one table of functions, so the trainer picks a backend
// once (the CPU table over host memory, or the CUDA table over the current device's memory) and
// then calls through it, with no forwarding layer in between. Every entry has the contract of
// the kernel of the same name in train_kernels.h; the CUDA entries take DEVICE pointers except
// the host sides of the copies and the *_host outputs (train_kernels_cuda.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/train_kernels.h"
#include "runtime/status.h"

namespace coupler::kernels {

struct TrainKernelTable {
  const char* backend;  // "cpu" or "cuda"

  Status (*gemm)(bool trans_a, bool trans_b, float alpha, ConstMatrix a, ConstMatrix b,
                 float beta, MutMatrix c);
  Status (*add_bias_activate)(MutMatrix y, const float* bias, bool relu);
  Status (*relu_backward)(ConstMatrix y, MutMatrix dy);
  Status (*bias_grad_accumulate)(ConstMatrix dy, float* bias_grad);
  // *loss_sum_host and *correct_host are host memory; either may be null.
  Status (*softmax_cross_entropy)(ConstMatrix logits, const int32_t* labels, float grad_scale,
                                  MutMatrix* dlogits, double* loss_sum_host,
                                  size_t* correct_host);
  Status (*round_copy)(const float* src, void* dst, ElementType storage, size_t n);
  Status (*widen_copy)(const void* src, ElementType storage, float* dst, size_t n);
  Status (*scale)(float* x, size_t n, float s);
  Status (*all_finite)(const float* x, size_t n, bool* finite_host);
  Status (*unscale_all_finite)(float* x, size_t n, float s, bool* finite_host);
  // *sum_host (host memory) = the sum of x[i]^2 in double: gradient-norm clipping.
  Status (*sum_squares)(const float* x, size_t n, double* sum_host);
  Status (*sgd_momentum_step)(float* w, const float* g, float* v, size_t n, float lr,
                              float momentum, float weight_decay);
  Status (*adamw_step)(float* w, const float* g, float* m, float* v, size_t n,
                       const AdamWParams& params, int64_t step);

  // Buffers: a zero fill, and blocking copies between host memory and the backend's memory.
  Status (*zero)(void* dst, size_t bytes);
  Status (*copy_from_host)(void* dst, const void* host_src, size_t bytes);
  Status (*copy_to_host)(void* host_dst, const void* src, size_t bytes);

  // The gradient reducer's bucket math (train/comm/bucket_math.h).
  Status (*divide)(float* out, const float* in, size_t n, float divisor);
  Status (*pack_half)(const float* in, float scale, uint16_t* out, size_t n, ElementType storage);
  Status (*unpack_half)(const uint16_t* in, float* out, size_t n, ElementType storage);
};

// The CPU kernels of train_kernels.h; always there.
const TrainKernelTable& CpuTrainKernels();

// The CUDA twins of train_kernels_cuda.h; Unavailable in a build without CUDA.
Result<const TrainKernelTable*> CudaTrainKernels();

}  // namespace coupler::kernels
