// cuBLAS, opened on the first GPU GEMM instead of linked. Linked, its libraries' initializers
// run in every coupler process at start, GPU or not: an empty program linked to libcublas
// starts in 0.08-0.13 s with 218 MB resident against 0.00 s and 1 MB unlinked (measured here),
// and coupler runs a coordinator and one process per worker. Only GemmCuda needs it.
#pragma once

#include <cublas_v2.h>

#include "runtime/status.h"

namespace coupler::kernels {

// The entry points GemmCuda calls, typed from cublas_v2.h so a mismatch fails to compile.
struct CublasApi {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasSetMathMode) set_math_mode = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  // cublas_api.h also has an inline C++ overload (a cudaDataType compute type): the exported
  // one is picked by its type.
  using GemmEx = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int,
                                    int, int, const void*, const void*, cudaDataType, int,
                                    const void*, cudaDataType, int, const void*, void*,
                                    cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
  GemmEx gemm_ex = nullptr;
  decltype(&cublasGetStatusString) status_string = nullptr;
};

// The process's cuBLAS, loaded once (thread-safe): libcublas.so.<major> of the toolkit this
// was built with, from the loader's path or else beside the libcudart in use. Unavailable,
// with the loader's reason, when it cannot be opened or lacks an entry point.
Result<const CublasApi*> Cublas();

}  // namespace coupler::kernels
