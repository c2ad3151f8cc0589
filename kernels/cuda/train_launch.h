// Launch helpers shared by the CUDA training kernels (train_cuda.cu, train_optimizer_cuda.cu):
// per-storage-format dispatch, grid-stride indexing and launch checks. For kernels/cuda/*.cu only.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <string>
#include <type_traits>

#include "kernels/cuda/column_pass.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/train_elementwise.h"
#include "kernels/train_kernels.h"
#include "runtime/status.h"

namespace coupler::kernels {

template <ElementType kStorage>
using Bits = typename StorageElement<kStorage>::Bits;

template <ElementType kStorage>
using StorageTag = std::integral_constant<ElementType, kStorage>;

// Calls f(StorageTag<S>{}) for the runtime `storage`.
template <typename F>
Status DispatchStorage(ElementType storage, F&& f) {
  switch (storage) {
    case ElementType::kFloat32:
      return f(StorageTag<ElementType::kFloat32>{});
    case ElementType::kFloat16:
      return f(StorageTag<ElementType::kFloat16>{});
    case ElementType::kBFloat16:
      return f(StorageTag<ElementType::kBFloat16>{});
    default: break;  // not a storage format
  }
  return InvalidArgument("unknown Storage " + std::to_string(static_cast<int>(storage)));
}

__device__ inline size_t FirstIndex() {
  return static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline size_t GridStride() { return static_cast<size_t>(blockDim.x) * gridDim.x; }

// Blocks for a grid-stride loop over n elements.
inline Result<int> BlocksFor(size_t n) {
  COUPLER_ASSIGN_OR_RETURN(const int max_blocks, MaxResidentBlocks());
  const size_t wanted = (n + kThreadsPerBlock - 1) / kThreadsPerBlock;
  return static_cast<int>(std::min<size_t>(std::max<size_t>(wanted, 1), max_blocks));
}

// After a launch: a bad configuration or missing kernel image is reported here, naming the
// kernel.
inline Status CheckLaunch(const char* kernel) {
  const cudaError_t error = cudaGetLastError();
  if (error == cudaSuccess) return Status::Ok();
  return CudaErrorStatus(error, kernel, __FILE__, __LINE__);
}

inline Status NullPointer(const char* op) {
  return InvalidArgument(std::string(op) + ": null pointer");
}

}  // namespace coupler::kernels
