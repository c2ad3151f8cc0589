// CUDA twins of the fp32 <-> 16-bit copies, scaling, the finiteness check and the optimizer
// steps (train_kernels_cuda.h). The optimizer kernels can also write the rounded 16-bit compute
// copy of the updated weights in the same pass, saving a second read of the master weights.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cuda/column_pass.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/cuda/train_launch.h"
#include "kernels/train_elementwise.h"
#include "kernels/train_kernels_cuda.h"

namespace coupler::kernels {
namespace {

// ---- Copies, scale, finiteness ------------------------------------------------------------

template <ElementType kStorage>
__global__ void RoundCopyKernel(const float* __restrict__ src, Bits<kStorage>* __restrict__ dst,
                                size_t n) {
  for (size_t i = FirstIndex(); i < n; i += GridStride()) {
    dst[i] = StorageElement<kStorage>::Store(src[i]);
  }
}

template <ElementType kStorage>
__global__ void WidenCopyKernel(const Bits<kStorage>* __restrict__ src, float* __restrict__ dst,
                                size_t n) {
  for (size_t i = FirstIndex(); i < n; i += GridStride()) {
    dst[i] = StorageElement<kStorage>::Load(src[i]);
  }
}

__global__ void ScaleKernel(float* __restrict__ x, size_t n, float s) {
  for (size_t i = FirstIndex(); i < n; i += GridStride()) x[i] *= s;
}

// *non_finite is set to 1 by any block that saw inf or NaN; one atomic per block at most.
// kUnscale: x[i] *= s first and the product is checked, in the same read of the gradients
// (the loss scaler's unscale + overflow check in one pass).
template <bool kUnscale>
__global__ void FiniteCheckKernel(float* __restrict__ x, size_t n, float s, int* non_finite) {
  int seen = 0;
  for (size_t i = FirstIndex(); i < n; i += GridStride()) {
    float v = x[i];
    if (kUnscale) {
      v *= s;
      x[i] = v;
    }
    seen |= IsNonFinite(v) ? 1 : 0;
  }
  if (__syncthreads_or(seen) != 0 && threadIdx.x == 0) atomicOr(non_finite, 1);
}

template <bool kUnscale>
Status RunFiniteCheck(float* x, size_t n, float s, bool* finite_host) {
  COUPLER_ASSIGN_OR_RETURN(const int blocks, BlocksFor(n));
  COUPLER_ASSIGN_OR_RETURN(DeviceBuffer flag, DeviceBuffer::Allocate(sizeof(int)));
  COUPLER_CUDA_RETURN_IF_ERROR(cudaMemset(flag.as<int>(), 0, sizeof(int)));
  FiniteCheckKernel<kUnscale><<<blocks, kThreadsPerBlock>>>(x, n, s, flag.as<int>());
  COUPLER_RETURN_IF_ERROR(CheckLaunch("FiniteCheckKernel"));
  int non_finite = 0;
  COUPLER_CUDA_RETURN_IF_ERROR(
      cudaMemcpy(&non_finite, flag.as<int>(), sizeof(int), cudaMemcpyDeviceToHost));
  *finite_host = non_finite == 0;
  return Status::Ok();
}

// Each block's sum of squares into partial[blockIdx.x]: per-thread sums in grid-stride order,
// then a tree in shared memory, so the same launch gives the same bits every time.
__global__ void SumSquaresKernel(const float* __restrict__ x, size_t n, double* partial) {
  __shared__ double sums[kThreadsPerBlock];
  double sum = 0;
  for (size_t i = FirstIndex(); i < n; i += GridStride()) {
    const double v = x[i];
    sum = __dadd_rn(sum, __dmul_rn(v, v));
  }
  sums[threadIdx.x] = sum;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) sums[threadIdx.x] = __dadd_rn(sums[threadIdx.x], sums[threadIdx.x + half]);
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = sums[0];
}

// ---- Optimizer steps ----------------------------------------------------------------------

template <ElementType kStorage, bool kCopy>
__global__ void SgdKernel(float* __restrict__ w, const float* __restrict__ g,
                          float* __restrict__ v, size_t n, float lr, float momentum,
                          float weight_decay, Bits<kStorage>* __restrict__ copy) {
  for (size_t i = FirstIndex(); i < n; i += GridStride()) {
    float wi = w[i];
    float vi = v[i];
    SgdMomentumElement(wi, g[i], vi, lr, momentum, weight_decay);
    w[i] = wi;
    v[i] = vi;
    if (kCopy) copy[i] = StorageElement<kStorage>::Store(wi);
  }
}

template <ElementType kStorage, bool kCopy>
__global__ void AdamWKernel(float* __restrict__ w, const float* __restrict__ g,
                            float* __restrict__ m, float* __restrict__ v, size_t n,
                            AdamWStepConstants c, Bits<kStorage>* __restrict__ copy) {
  for (size_t i = FirstIndex(); i < n; i += GridStride()) {
    float wi = w[i];
    float mi = m[i];
    float vi = v[i];
    AdamWElement(wi, g[i], mi, vi, c);
    w[i] = wi;
    m[i] = mi;
    v[i] = vi;
    if (kCopy) copy[i] = StorageElement<kStorage>::Store(wi);
  }
}

}  // namespace

Status RoundCopyCuda(const float* src, void* dst, ElementType storage, size_t n) {
  if (n == 0) return Status::Ok();
  if (src == nullptr || dst == nullptr) return NullPointer("RoundCopyCuda");
  COUPLER_ASSIGN_OR_RETURN(const int blocks, BlocksFor(n));
  return DispatchStorage(storage, [&](auto tag) {
    constexpr ElementType kS = decltype(tag)::value;
    RoundCopyKernel<kS><<<blocks, kThreadsPerBlock>>>(src, static_cast<Bits<kS>*>(dst), n);
    return CheckLaunch("RoundCopyKernel");
  });
}

Status WidenCopyCuda(const void* src, ElementType storage, float* dst, size_t n) {
  if (n == 0) return Status::Ok();
  if (src == nullptr || dst == nullptr) return NullPointer("WidenCopyCuda");
  COUPLER_ASSIGN_OR_RETURN(const int blocks, BlocksFor(n));
  return DispatchStorage(storage, [&](auto tag) {
    constexpr ElementType kS = decltype(tag)::value;
    WidenCopyKernel<kS><<<blocks, kThreadsPerBlock>>>(static_cast<const Bits<kS>*>(src), dst, n);
    return CheckLaunch("WidenCopyKernel");
  });
}

Status ScaleCuda(float* x, size_t n, float s) {
  if (n == 0) return Status::Ok();
  if (x == nullptr) return NullPointer("ScaleCuda");
  COUPLER_ASSIGN_OR_RETURN(const int blocks, BlocksFor(n));
  ScaleKernel<<<blocks, kThreadsPerBlock>>>(x, n, s);
  return CheckLaunch("ScaleKernel");
}

Status AllFiniteCuda(const float* x, size_t n, bool* finite_host) {
  if (finite_host == nullptr) return NullPointer("AllFiniteCuda");
  *finite_host = true;
  if (n == 0) return Status::Ok();
  if (x == nullptr) return NullPointer("AllFiniteCuda");
  // The kernel only writes x when it unscales; this instantiation never does.
  return RunFiniteCheck<false>(const_cast<float*>(x), n, 1.0f, finite_host);
}

Status UnscaleAllFiniteCuda(float* x, size_t n, float s, bool* finite_host) {
  if (finite_host == nullptr) return NullPointer("UnscaleAllFiniteCuda");
  *finite_host = true;
  if (n == 0) return Status::Ok();
  if (x == nullptr) return NullPointer("UnscaleAllFiniteCuda");
  return RunFiniteCheck<true>(x, n, s, finite_host);
}

Status SumSquaresCuda(const float* x, size_t n, double* sum_host) {
  if (sum_host == nullptr) return NullPointer("SumSquaresCuda");
  *sum_host = 0;
  if (n == 0) return Status::Ok();
  if (x == nullptr) return NullPointer("SumSquaresCuda");
  COUPLER_ASSIGN_OR_RETURN(const int blocks, BlocksFor(n));
  COUPLER_ASSIGN_OR_RETURN(DeviceBuffer partial,
                           DeviceBuffer::Allocate(static_cast<size_t>(blocks) * sizeof(double)));
  SumSquaresKernel<<<blocks, kThreadsPerBlock>>>(x, n, partial.as<double>());
  COUPLER_RETURN_IF_ERROR(CheckLaunch("SumSquaresKernel"));
  std::vector<double> host(static_cast<size_t>(blocks));
  COUPLER_CUDA_RETURN_IF_ERROR(cudaMemcpy(host.data(), partial.as<double>(),
                                          host.size() * sizeof(double), cudaMemcpyDeviceToHost));
  double sum = 0;
  for (const double p : host) sum += p;
  *sum_host = sum;
  return Status::Ok();
}

Status SgdMomentumStepCuda(float* w, const float* g, float* v, size_t n, float lr, float momentum,
                           float weight_decay, void* compute_copy, ElementType storage) {
  if (n == 0) return Status::Ok();
  if (w == nullptr || g == nullptr || v == nullptr) return NullPointer("SgdMomentumStepCuda");
  COUPLER_ASSIGN_OR_RETURN(const int blocks, BlocksFor(n));
  return DispatchStorage(storage, [&](auto tag) {
    constexpr ElementType kS = decltype(tag)::value;
    auto* copy = static_cast<Bits<kS>*>(compute_copy);
    if (copy != nullptr) {
      SgdKernel<kS, true><<<blocks, kThreadsPerBlock>>>(w, g, v, n, lr, momentum, weight_decay,
                                                        copy);
    } else {
      SgdKernel<kS, false><<<blocks, kThreadsPerBlock>>>(w, g, v, n, lr, momentum, weight_decay,
                                                         nullptr);
    }
    return CheckLaunch("SgdKernel");
  });
}

Status AdamWStepCuda(float* w, const float* g, float* m, float* v, size_t n,
                     const AdamWParams& params, int64_t step, void* compute_copy,
                     ElementType storage) {
  if (step < 1) {
    return InvalidArgument("AdamWStepCuda: step counts from 1, got " + std::to_string(step));
  }
  // beta == 1 would make a bias correction zero and every weight NaN.
  if (!(params.beta1 >= 0.0f && params.beta1 < 1.0f && params.beta2 >= 0.0f &&
        params.beta2 < 1.0f)) {
    return InvalidArgument("AdamWStepCuda: betas must lie in [0, 1)");
  }
  if (n == 0) return Status::Ok();
  if (w == nullptr || g == nullptr || m == nullptr || v == nullptr) {
    return NullPointer("AdamWStepCuda");
  }
  const AdamWStepConstants constants = MakeAdamWStepConstants(params, step);
  COUPLER_ASSIGN_OR_RETURN(const int blocks, BlocksFor(n));
  return DispatchStorage(storage, [&](auto tag) {
    constexpr ElementType kS = decltype(tag)::value;
    auto* copy = static_cast<Bits<kS>*>(compute_copy);
    if (copy != nullptr) {
      AdamWKernel<kS, true><<<blocks, kThreadsPerBlock>>>(w, g, m, v, n, constants, copy);
    } else {
      AdamWKernel<kS, false><<<blocks, kThreadsPerBlock>>>(w, g, m, v, n, constants, nullptr);
    }
    return CheckLaunch("AdamWKernel");
  });
}

}  // namespace coupler::kernels
