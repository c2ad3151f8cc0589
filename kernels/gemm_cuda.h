// The CUDA twin of Gemm (kernels/train_kernels.h) on device pointers, through cuBLAS. CUDA-free:
// defined in kernels/cuda/gemm_cuda.cc, only in a build with CUDA (other code reaches it as the
// CUDA table's gemm, kernels/train_kernel_table.h).
#pragma once

#include "kernels/train_kernels.h"
#include "runtime/status.h"

namespace coupler::kernels {

// c = alpha * op(a) * op(b) + beta * c on the calling thread's current device; a, b and c hold
// DEVICE pointers, row-major and densely packed as in Gemm. Accumulates in exact fp32 (no TF32);
// a 16-bit c is rounded once per element; beta == 0 never reads the old c.
//
// a and b must share a storage; c is either that storage or fp32 (fp32 operands need an fp32
// c), as cublasGemmEx allows. Shape or storage mismatches and dimensions past INT_MAX are
// InvalidArgument; cuBLAS failures are Internal (ResourceExhausted when cuBLAS runs out of
// memory, Unavailable without a usable device).
//
// Asynchronous: enqueued on the legacy default stream, so a following cudaMemcpy (or
// DeviceAllocation::CopyToHost) sees the result. Each calling thread gets its own cuBLAS
// handle, created on first use and destroyed when the thread exits.
Status GemmCuda(bool trans_a, bool trans_b, float alpha, ConstMatrix a, ConstMatrix b, float beta,
                MutMatrix c);

}  // namespace coupler::kernels
