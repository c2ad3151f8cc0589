// GemmCuda through cublasGemmEx. cuBLAS is column-major; a row-major m x n matrix read
// column-major is its transpose, so C^T = op(B)^T op(A)^T is computed with the operands swapped
// and no copies. cuBLAS itself is opened on first use (kernels/cuda/cublas_library.h).
#include "kernels/gemm_cuda.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <string>

#include "kernels/cuda/cublas_library.h"
#include "kernels/cuda/cuda_check.h"

namespace coupler::kernels {
namespace {

const char* ShortPath(const char* file) {
  const char* p = std::strstr(file, "kernels/");
  return p != nullptr ? p : file;
}

Status CublasErrorStatus(const CublasApi& api, cublasStatus_t status, const char* call,
                         const char* file, int line) {
  std::string message = std::string(call) + " failed at " + ShortPath(file) + ":" +
                        std::to_string(line) + ": " + api.status_string(status) + " (" +
                        std::to_string(static_cast<int>(status)) + ")";
  if (status == CUBLAS_STATUS_ALLOC_FAILED) return ResourceExhausted(std::move(message));
  if (status == CUBLAS_STATUS_NOT_INITIALIZED || status == CUBLAS_STATUS_ARCH_MISMATCH) {
    return Unavailable(std::move(message));
  }
  return Internal(std::move(message));
}

// `api` is the CublasApi in scope.
#define COUPLER_CUBLAS_RETURN_IF_ERROR(call)                                              \
  do {                                                                                    \
    const cublasStatus_t coupler_cublas_status_ = (call);                                 \
    if (coupler_cublas_status_ != CUBLAS_STATUS_SUCCESS) {                                \
      return CublasErrorStatus(api, coupler_cublas_status_, #call, __FILE__, __LINE__);   \
    }                                                                                     \
  } while (0)

// The calling thread's cuBLAS handle. A handle belongs to the device current when it was
// created, so a thread that moves to another device gets a new one.
class ThreadCublasHandle {
 public:
  ThreadCublasHandle() = default;
  ThreadCublasHandle(const ThreadCublasHandle&) = delete;
  ThreadCublasHandle& operator=(const ThreadCublasHandle&) = delete;
  // At process exit the CUDA context may already be gone; nothing useful can be done then.
  ~ThreadCublasHandle() { Destroy(); }

  Result<cublasHandle_t> Get(const CublasApi& api) {
    int device = 0;
    COUPLER_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device));
    if (handle_ != nullptr && device == device_) return handle_;
    Destroy();
    cublasHandle_t handle = nullptr;
    COUPLER_CUBLAS_RETURN_IF_ERROR(api.create(&handle));
    // Exact fp32 for fp32 operands: parity with the CPU Gemm matters more than TF32's speed.
    const cublasStatus_t mode = api.set_math_mode(handle, CUBLAS_DEFAULT_MATH);
    if (mode != CUBLAS_STATUS_SUCCESS) {
      (void)api.destroy(handle);
      return CublasErrorStatus(api, mode, "cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH)",
                               __FILE__, __LINE__);
    }
    api_ = &api;
    handle_ = handle;
    device_ = device;
    return handle_;
  }

 private:
  void Destroy() noexcept {
    if (handle_ != nullptr) (void)api_->destroy(handle_);
    handle_ = nullptr;
  }

  const CublasApi* api_ = nullptr;  // set with handle_
  cublasHandle_t handle_ = nullptr;
  int device_ = -1;
};

cudaDataType_t CudaType(ElementType storage) {
  switch (storage) {
    case ElementType::kFloat32: return CUDA_R_32F;
    case ElementType::kFloat16: return CUDA_R_16F;
    case ElementType::kBFloat16: return CUDA_R_16BF;
    default: break;  // not a storage format
  }
  return CUDA_R_32F;
}

bool FitsInt(size_t v) { return v <= static_cast<size_t>(INT_MAX); }

}  // namespace

Status GemmCuda(bool trans_a, bool trans_b, float alpha, ConstMatrix a, ConstMatrix b, float beta,
                MutMatrix c) {
  const size_t m = trans_a ? a.cols : a.rows;
  const size_t k = trans_a ? a.rows : a.cols;
  const size_t k_b = trans_b ? b.cols : b.rows;
  const size_t n = trans_b ? b.rows : b.cols;
  if (k != k_b) {
    return InvalidArgument("GemmCuda: op(a) is " + std::to_string(m) + "x" + std::to_string(k) +
                           " but op(b) is " + std::to_string(k_b) + "x" + std::to_string(n));
  }
  if (c.rows != m || c.cols != n) {
    return InvalidArgument("GemmCuda: c is " + std::to_string(c.rows) + "x" +
                           std::to_string(c.cols) + ", want " + std::to_string(m) + "x" +
                           std::to_string(n));
  }
  if (a.storage != b.storage) {
    return InvalidArgument(std::string("GemmCuda: a is ") + ShortElementTypeName(a.storage) +
                           " but b is " + ShortElementTypeName(b.storage) +
                           "; cublasGemmEx needs one operand storage");
  }
  if (c.storage != a.storage && c.storage != ElementType::kFloat32) {
    return InvalidArgument(std::string("GemmCuda: ") + ShortElementTypeName(a.storage) +
                           " operands cannot write a " + ShortElementTypeName(c.storage) + " c");
  }
  if (!FitsInt(m) || !FitsInt(n) || !FitsInt(k) || !FitsInt(a.cols) || !FitsInt(b.cols)) {
    return InvalidArgument("GemmCuda: a dimension exceeds INT_MAX");
  }
  if (m == 0 || n == 0) return Status::Ok();
  if (c.data == nullptr || (k > 0 && (a.data == nullptr || b.data == nullptr))) {
    return InvalidArgument("GemmCuda: null matrix data");
  }

  COUPLER_ASSIGN_OR_RETURN(const CublasApi* loaded, Cublas());
  const CublasApi& api = *loaded;
  thread_local ThreadCublasHandle thread_handle;
  COUPLER_ASSIGN_OR_RETURN(cublasHandle_t handle, thread_handle.Get(api));
  COUPLER_CUBLAS_RETURN_IF_ERROR(api.set_stream(handle, nullptr));

  // Column-major view: B's row-major storage is B^T with leading dimension b.cols, so
  // op(B)^T is B^T untransposed when !trans_b. cuBLAS wants ld >= 1 even when k == 0.
  const int ldb = static_cast<int>(std::max<size_t>(1, b.cols));
  const int lda = static_cast<int>(std::max<size_t>(1, a.cols));
  const cublasOperation_t op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  COUPLER_CUBLAS_RETURN_IF_ERROR(api.gemm_ex(
      handle, op_b, op_a, static_cast<int>(n), static_cast<int>(m), static_cast<int>(k), &alpha,
      b.data, CudaType(b.storage), ldb, a.data, CudaType(a.storage), lda, &beta, c.data,
      CudaType(c.storage), static_cast<int>(n), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  return Status::Ok();
}

}  // namespace coupler::kernels
