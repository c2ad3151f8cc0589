#include "kernels/int8_gemm.h"

#include <string>
#include <utility>

#include "kernels/cpu/int8_gemm_cpu.h"
#include "runtime/check.h"
#include "kernels/cpu/onednn_gemm.h"
#include "kernels/cuda/batch_cuda.h"
#include "kernels/device.h"

namespace coupler::kernels {
namespace {

Status CheckInput(const Int8Activations& a, const Int8Weights& w, std::span<const float> c) {
  const size_t n = w.rows();
  if (a.cols == 0 || a.cols > kInt8GemmMaxInner) {
    return InvalidArgument("int8_gemm: inner dimension " + std::to_string(a.cols) +
                           " is not in [1, " + std::to_string(kInt8GemmMaxInner) + "]");
  }
  if (n == 0 || w.cols() != a.cols) {
    return InvalidArgument("int8_gemm: " + std::to_string(w.rows()) + " x " +
                           std::to_string(w.cols()) + " weights for " + std::to_string(a.cols) +
                           " inputs");
  }
  if (c.size() != a.rows * n) {
    return InvalidArgument("int8_gemm: output holds " + std::to_string(c.size()) +
                           " values, the product has " + std::to_string(a.rows) + " x " +
                           std::to_string(n));
  }
  if (a.rows > 0 && a.data == nullptr) return InvalidArgument("int8_gemm: null activations");
  return Status::Ok();
}

}  // namespace

Int8Weights::Int8Weights(std::vector<int8_t> q, size_t rows, size_t cols,
                         std::vector<float> scale)
    : q_(std::move(q)), scale_(std::move(scale)), rows_(rows), cols_(cols),
      packed_(NewInt8Packed()) {
  COUPLER_CHECK(q_.size() == rows * cols && scale_.size() == rows)
      << "Int8Weights: " << q_.size() << " values and " << scale_.size() << " scales for "
      << rows << " x " << cols;
}

Status Int8Gemm(Int8Activations a, const Int8Weights& w, std::span<float> c, Backend backend) {
  COUPLER_RETURN_IF_ERROR(CheckInput(a, w, c));
  const size_t n = w.rows();
  const float* scale = w.scale().data();
  switch (backend) {
    case Backend::kCpu:
      if (a.rows == 0) return Status::Ok();
      if (!OneDnnInt8Gemm(a, w, c.data())) Int8GemmLoop(a, w.q().data(), n, scale, c.data());
      return Status::Ok();
    case Backend::kCuda: {
      if (!BuiltWithCuda()) {
        return Unavailable("int8_gemm: the CUDA backend was requested but coupler was built "
                           "without CUDA (COUPLER_WITH_CUDA=OFF); use the CPU backend");
      }
      if (a.rows == 0) return Status::Ok();
      const Status status = Int8GemmCuda(a.data, a.is_signed, a.rows, a.cols, w.q().data(), n,
                                         scale, c.data());
      return status.ok() ? status : status.WithContext("int8_gemm (cuda)");
    }
  }
  return InvalidArgument("int8_gemm: unknown backend");
}

}  // namespace coupler::kernels
