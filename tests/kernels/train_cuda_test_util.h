// Shared by the CUDA training-kernel parity tests: device upload/download, poisoning, random
// inputs, tolerances per storage and the shapes every kernel is tried on.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/device.h"
#include "kernels/train_kernels.h"
#include "kernels/train_kernel_table.h"
#include "kernels/train_kernels_cuda.h"
#include "tests/kernels/kernel_test_util.h"

#if defined(COUPLER_WITH_CUDA)
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_buffer.h"

namespace coupler::kernels::train_cuda_test {

constexpr ElementType kStorages[] = {ElementType::kFloat32, ElementType::kFloat16,
                                     ElementType::kBFloat16};

inline const char* Name(ElementType storage) { return ShortElementTypeName(storage); }

// The parity bounds of the brief: relative error of a result stored in `storage`.
inline double RelTol(ElementType storage) {
  switch (storage) {
    case ElementType::kFloat32: return 1e-5;
    case ElementType::kFloat16: return 1e-3;
    case ElementType::kBFloat16: return 1e-2;
    default: break;  // not a storage format
  }
  return 0.0;
}

inline uint32_t PoisonBits(ElementType storage) {
  switch (storage) {
    case ElementType::kFloat32: return kPoisonFloatBits;
    case ElementType::kFloat16: return kPoisonFp16Bits;
    case ElementType::kBFloat16: return kPoisonBf16Bits;
    default: break;  // not a storage format
  }
  return 0;
}

// Host <-> device copies for the tests.
inline Status Upload(const void* host, size_t bytes, DeviceBuffer* device) {
  COUPLER_ASSIGN_OR_RETURN(*device, DeviceBuffer::Allocate(std::max<size_t>(bytes, 1)));
  COUPLER_CUDA_RETURN_IF_ERROR(
      cudaMemcpy(device->as<void>(), host, bytes, cudaMemcpyHostToDevice));
  return Status::Ok();
}
template <typename T>
Status Upload(const std::vector<T>& host, DeviceBuffer* device) {
  return Upload(host.data(), host.size() * sizeof(T), device);
}
template <typename T>
Status Download(const DeviceBuffer& device, std::vector<T>* host) {
  COUPLER_CUDA_RETURN_IF_ERROR(cudaMemcpy(host->data(), device.as<void>(),
                                          host->size() * sizeof(T), cudaMemcpyDeviceToHost));
  return Status::Ok();
}
// All bytes 0xFF: a NaN in every format, which no kernel here writes for finite inputs.
inline Status PoisonDevice(const DeviceBuffer& device) {
  COUPLER_CUDA_RETURN_IF_ERROR(cudaMemset(device.as<void>(), 0xFF, device.bytes()));
  return Status::Ok();
}

// A row-major matrix of `storage` elements in host memory.
struct HostMatrix {
  ElementType storage = ElementType::kFloat32;
  size_t rows = 0;
  size_t cols = 0;
  std::vector<uint8_t> bytes;

  size_t size() const { return rows * cols; }
  ConstMatrix Const() const { return {bytes.data(), storage, rows, cols}; }
  MutMatrix Mut() { return {bytes.data(), storage, rows, cols}; }
  ConstMatrix ConstOn(const DeviceBuffer& d) const { return {d.as<void>(), storage, rows, cols}; }
  MutMatrix MutOn(const DeviceBuffer& d) const { return {d.as<void>(), storage, rows, cols}; }
  std::vector<float> Widened() const {
    std::vector<float> out(size());
    EXPECT_TRUE(WidenCopy(bytes.data(), storage, out.data(), size()).ok());
    return out;
  }
};

inline std::vector<float> RandomFloats(size_t n, float lo, float hi, uint64_t seed) {
  SplitMix64 rng(seed);
  std::vector<float> out(n);
  for (float& v : out) v = rng.Uniform(lo, hi);
  return out;
}

inline HostMatrix RandomMatrix(ElementType storage, size_t rows, size_t cols, float lo, float hi,
                               uint64_t seed) {
  HostMatrix m{storage, rows, cols, std::vector<uint8_t>(rows * cols * StorageBytes(storage))};
  const std::vector<float> values = RandomFloats(rows * cols, lo, hi, seed);
  EXPECT_TRUE(RoundCopy(values.data(), m.bytes.data(), storage, values.size()).ok());
  return m;
}

// |want - got| <= rel_tol * max(|want|, |got|) + abs_tol everywhere, and no NaN in `got`.
inline ::testing::AssertionResult Close(std::span<const float> want, std::span<const float> got,
                                 double rel_tol, double abs_tol) {
  if (want.size() != got.size()) return ::testing::AssertionFailure() << "sizes differ";
  for (size_t i = 0; i < want.size(); ++i) {
    const double a = want[i];
    const double b = got[i];
    if (std::isnan(b) || std::abs(a - b) > rel_tol * std::max(std::abs(a), std::abs(b)) + abs_tol) {
      return ::testing::AssertionFailure() << "element " << i << " of " << want.size()
                                           << ": CPU " << a << ", CUDA " << b;
    }
  }
  return ::testing::AssertionSuccess();
}

struct Shape {
  size_t rows;
  size_t cols;
};
// Tails of a block, several tiles, and more elements than one grid pass covers.
constexpr Shape kShapes[] = {{37, 45}, {5, 1000}, {1025, 1031}};
// Lengths for the flat kernels: one element, a block's tail, more than one grid pass.
constexpr size_t kLengths[] = {1, 257, (size_t{1} << 20) + 3};

// The CPU kernels' answers as values, to compare the CUDA twins' with.
inline double CpuLossSum(ConstMatrix logits, const int32_t* labels, float grad_scale,
                         MutMatrix* dlogits, size_t* correct) {
  double loss = NAN;
  EXPECT_TRUE(SoftmaxCrossEntropy(logits, labels, grad_scale, dlogits, &loss, correct).ok());
  return loss;
}
inline bool CpuAllFinite(const float* x, size_t n) {
  bool finite = false;
  EXPECT_TRUE(AllFinite(x, n, &finite).ok());
  return finite;
}

}  // namespace coupler::kernels::train_cuda_test

#endif  // COUPLER_WITH_CUDA
