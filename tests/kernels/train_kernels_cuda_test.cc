// The CUDA twins of the training kernels against the CPU ones, on fresh random inputs, for every
// Storage format: outputs poisoned before each CUDA run so an unwritten element shows. Needs a
// GPU (skipped without one); a CPU-only build checks that the twins answer Unavailable.
#include "kernels/train_kernels_cuda.h"

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
#include "tests/kernels/kernel_test_util.h"

#if defined(COUPLER_WITH_CUDA)
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_buffer.h"
#endif

namespace coupler::kernels {
namespace {

#if defined(COUPLER_WITH_CUDA)

constexpr Storage kStorages[] = {Storage::kFloat32, Storage::kFp16, Storage::kBf16};

const char* Name(Storage storage) { return StorageName(storage); }

// The parity bounds of the brief: relative error of a result stored in `storage`.
double RelTol(Storage storage) {
  switch (storage) {
    case Storage::kFloat32: return 1e-5;
    case Storage::kFp16: return 1e-3;
    case Storage::kBf16: return 1e-2;
  }
  return 0.0;
}

uint32_t PoisonBits(Storage storage) {
  switch (storage) {
    case Storage::kFloat32: return kPoisonFloatBits;
    case Storage::kFp16: return kPoisonFp16Bits;
    case Storage::kBf16: return kPoisonBf16Bits;
  }
  return 0;
}

// Host <-> device copies for the tests.
Status Upload(const void* host, size_t bytes, DeviceBuffer* device) {
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
Status PoisonDevice(const DeviceBuffer& device) {
  COUPLER_CUDA_RETURN_IF_ERROR(cudaMemset(device.as<void>(), 0xFF, device.bytes()));
  return Status::Ok();
}

// A row-major matrix of `storage` elements in host memory.
struct HostMatrix {
  Storage storage = Storage::kFloat32;
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
    WidenCopy(bytes.data(), storage, out.data(), size());
    return out;
  }
};

std::vector<float> RandomFloats(size_t n, float lo, float hi, uint64_t seed) {
  SplitMix64 rng(seed);
  std::vector<float> out(n);
  for (float& v : out) v = rng.Uniform(lo, hi);
  return out;
}

HostMatrix RandomMatrix(Storage storage, size_t rows, size_t cols, float lo, float hi,
                        uint64_t seed) {
  HostMatrix m{storage, rows, cols, std::vector<uint8_t>(rows * cols * StorageBytes(storage))};
  const std::vector<float> values = RandomFloats(rows * cols, lo, hi, seed);
  RoundCopy(values.data(), m.bytes.data(), storage, values.size());
  return m;
}

// |want - got| <= rel_tol * max(|want|, |got|) + abs_tol everywhere, and no NaN in `got`.
::testing::AssertionResult Close(std::span<const float> want, std::span<const float> got,
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

TEST(TrainKernelsTest, AddBiasActivateCudaMatchesCpu) {
  if (!HaveCudaDevice()) GTEST_SKIP() << "no CUDA device";
  uint64_t seed = 1;
  for (const Storage storage : kStorages) {
    for (const Shape shape : kShapes) {
      for (const bool relu : {false, true}) {
        SCOPED_TRACE(testing::Message() << Name(storage) << " " << shape.rows << "x"
                                        << shape.cols << " relu=" << relu);
        HostMatrix y = RandomMatrix(storage, shape.rows, shape.cols, -4.0f, 4.0f, ++seed);
        const std::vector<float> bias = RandomFloats(shape.cols, -2.0f, 2.0f, ++seed);
        DeviceBuffer d_y, d_bias;
        COUPLER_ASSERT_OK(Upload(y.bytes, &d_y));
        COUPLER_ASSERT_OK(Upload(bias, &d_bias));
        AddBiasActivate(y.Mut(), bias.data(), relu);
        COUPLER_ASSERT_OK(AddBiasActivateCuda(y.MutOn(d_y), d_bias.as<float>(), relu));
        HostMatrix got = y;
        COUPLER_ASSERT_OK(Download(d_y, &got.bytes));
        EXPECT_TRUE(Close(y.Widened(), got.Widened(), RelTol(storage), 1e-6));
      }
    }
  }
}

TEST(TrainKernelsTest, ReluBackwardCudaMatchesCpu) {
  if (!HaveCudaDevice()) GTEST_SKIP() << "no CUDA device";
  uint64_t seed = 100;
  for (const Storage y_storage : kStorages) {
    for (const Storage dy_storage : kStorages) {
      for (const Shape shape : kShapes) {
        SCOPED_TRACE(testing::Message() << "y " << Name(y_storage) << ", dy " << Name(dy_storage)
                                        << " " << shape.rows << "x" << shape.cols);
        std::vector<float> y_values = RandomFloats(shape.rows * shape.cols, -1.0f, 1.0f, ++seed);
        for (size_t i = 0; i < y_values.size(); i += 7) y_values[i] = 0.0f;  // masked
        for (size_t i = 3; i < y_values.size(); i += 11) y_values[i] = -0.0f;
        HostMatrix y{y_storage, shape.rows, shape.cols,
                     std::vector<uint8_t>(y_values.size() * StorageBytes(y_storage))};
        RoundCopy(y_values.data(), y.bytes.data(), y_storage, y_values.size());
        HostMatrix dy = RandomMatrix(dy_storage, shape.rows, shape.cols, -3.0f, 3.0f, ++seed);
        DeviceBuffer d_y, d_dy;
        COUPLER_ASSERT_OK(Upload(y.bytes, &d_y));
        COUPLER_ASSERT_OK(Upload(dy.bytes, &d_dy));
        ReluBackward(y.Const(), dy.Mut());
        COUPLER_ASSERT_OK(ReluBackwardCuda(y.ConstOn(d_y), dy.MutOn(d_dy)));
        HostMatrix got = dy;
        COUPLER_ASSERT_OK(Download(d_dy, &got.bytes));
        EXPECT_TRUE(SameBits<float>(dy.Widened(), got.Widened()));
      }
    }
  }
}

TEST(TrainKernelsTest, BiasGradAccumulateCudaMatchesCpu) {
  if (!HaveCudaDevice()) GTEST_SKIP() << "no CUDA device";
  uint64_t seed = 200;
  for (const Storage storage : kStorages) {
    for (const Shape shape : kShapes) {
      SCOPED_TRACE(testing::Message() << Name(storage) << " " << shape.rows << "x" << shape.cols);
      const HostMatrix dy = RandomMatrix(storage, shape.rows, shape.cols, -1.0f, 1.0f, ++seed);
      std::vector<float> bias_grad = RandomFloats(shape.cols, -1.0f, 1.0f, ++seed);
      DeviceBuffer d_dy, d_grad;
      COUPLER_ASSERT_OK(Upload(dy.bytes, &d_dy));
      COUPLER_ASSERT_OK(Upload(bias_grad, &d_grad));
      BiasGradAccumulate(dy.Const(), bias_grad.data());
      COUPLER_ASSERT_OK(BiasGradAccumulateCuda(dy.ConstOn(d_dy), d_grad.as<float>()));
      std::vector<float> got(shape.cols);
      COUPLER_ASSERT_OK(Download(d_grad, &got));
      // fp32 sums in another order: the error grows with the number of rows summed.
      EXPECT_TRUE(Close(bias_grad, got, 1e-5, 1e-6 * static_cast<double>(shape.rows)));
    }
  }
}

TEST(TrainKernelsTest, SoftmaxCrossEntropyCudaMatchesCpu) {
  if (!HaveCudaDevice()) GTEST_SKIP() << "no CUDA device";
  uint64_t seed = 300;
  constexpr Shape kSoftmaxShapes[] = {{37, 10}, {5, 1000}, {300, 45}};
  for (const Storage in_storage : kStorages) {
    for (const Shape shape : kSoftmaxShapes) {
      const HostMatrix logits =
          RandomMatrix(in_storage, shape.rows, shape.cols, -8.0f, 8.0f, ++seed);
      SplitMix64 rng(++seed);
      std::vector<int32_t> labels(shape.rows);
      for (int32_t& label : labels) label = static_cast<int32_t>(rng.Next() % shape.cols);
      const float grad_scale = 3.0f / static_cast<float>(shape.rows);
      DeviceBuffer d_logits, d_labels;
      COUPLER_ASSERT_OK(Upload(logits.bytes, &d_logits));
      COUPLER_ASSERT_OK(Upload(labels, &d_labels));
      // Evaluation (no dlogits) and then training with every dlogits format.
      {
        SCOPED_TRACE(testing::Message() << "eval " << Name(in_storage) << " " << shape.rows
                                        << "x" << shape.cols);
        size_t want_correct = 5;
        size_t got_correct = 5;
        const double want = SoftmaxCrossEntropy(logits.Const(), labels.data(), grad_scale,
                                                nullptr, &want_correct);
        double got = NAN;
        COUPLER_ASSERT_OK(SoftmaxCrossEntropyCuda(logits.ConstOn(d_logits),
                                                  d_labels.as<int32_t>(), grad_scale, nullptr,
                                                  &got, &got_correct));
        EXPECT_NEAR(got, want, 1e-5 * std::abs(want) + 1e-9);
        EXPECT_EQ(got_correct, want_correct);
      }
      for (const Storage out_storage : kStorages) {
        SCOPED_TRACE(testing::Message() << Name(in_storage) << " -> " << Name(out_storage) << " "
                                        << shape.rows << "x" << shape.cols);
        HostMatrix dlogits{out_storage, shape.rows, shape.cols,
                           std::vector<uint8_t>(shape.rows * shape.cols *
                                                StorageBytes(out_storage))};
        DeviceBuffer d_dlogits;
        COUPLER_ASSERT_OK(Upload(dlogits.bytes, &d_dlogits));
        COUPLER_ASSERT_OK(PoisonDevice(d_dlogits));
        size_t want_correct = 0;
        size_t got_correct = 0;
        MutMatrix host_out = dlogits.Mut();
        const double want = SoftmaxCrossEntropy(logits.Const(), labels.data(), grad_scale,
                                                &host_out, &want_correct);
        MutMatrix device_out = dlogits.MutOn(d_dlogits);
        double got = NAN;
        COUPLER_ASSERT_OK(SoftmaxCrossEntropyCuda(logits.ConstOn(d_logits),
                                                  d_labels.as<int32_t>(), grad_scale,
                                                  &device_out, &got, &got_correct));
        EXPECT_NEAR(got, want, 1e-5 * std::abs(want) + 1e-9);
        EXPECT_EQ(got_correct, want_correct);
        HostMatrix got_dlogits = dlogits;
        COUPLER_ASSERT_OK(Download(d_dlogits, &got_dlogits.bytes));
        EXPECT_TRUE(Close(dlogits.Widened(), got_dlogits.Widened(), RelTol(out_storage), 1e-6));
      }
    }
  }
}

TEST(TrainKernelsTest, SoftmaxCrossEntropyCudaRejectsOutOfRangeLabel) {
  if (!HaveCudaDevice()) GTEST_SKIP() << "no CUDA device";
  const HostMatrix logits = RandomMatrix(Storage::kFloat32, 4, 6, -1.0f, 1.0f, 7);
  const std::vector<int32_t> labels = {0, 5, 6, 1};
  DeviceBuffer d_logits, d_labels;
  COUPLER_ASSERT_OK(Upload(logits.bytes, &d_logits));
  COUPLER_ASSERT_OK(Upload(labels, &d_labels));
  double loss = 0.0;
  const Status status = SoftmaxCrossEntropyCuda(logits.ConstOn(d_logits), d_labels.as<int32_t>(),
                                                1.0f, nullptr, &loss, nullptr);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.ToString();
  EXPECT_NE(status.message().find("row 2"), std::string::npos) << status.ToString();
}

constexpr size_t kLengths[] = {1, 257, (size_t{1} << 20) + 3};

TEST(TrainKernelsTest, RoundAndWidenCopyCudaMatchCpu) {
  if (!HaveCudaDevice()) GTEST_SKIP() << "no CUDA device";
  uint64_t seed = 400;
  for (const Storage storage : kStorages) {
    for (const size_t n : kLengths) {
      SCOPED_TRACE(testing::Message() << Name(storage) << " n=" << n);
      // Every float class (NaN, inf, subnormals, rounding ties): these copies must be exact.
      const std::vector<float> src = RandomColumn(n, ++seed);
      const size_t width = StorageBytes(storage);
      std::vector<uint8_t> want(n * width);
      RoundCopy(src.data(), want.data(), storage, n);
      std::vector<uint8_t> poison(n * width);
      for (size_t i = 0; i < n; ++i) {
        const uint32_t bits = PoisonBits(storage);
        std::memcpy(poison.data() + i * width, &bits, width);  // little-endian low half
      }
      DeviceBuffer d_src, d_dst;
      COUPLER_ASSERT_OK(Upload(src, &d_src));
      COUPLER_ASSERT_OK(Upload(poison, &d_dst));
      COUPLER_ASSERT_OK(RoundCopyCuda(d_src.as<float>(), d_dst.as<void>(), storage, n));
      std::vector<uint8_t> got(n * width);
      COUPLER_ASSERT_OK(Download(d_dst, &got));
      EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size()), 0);

      // Widen the rounded values back; the fp32 output is poisoned with a signaling NaN that
      // widening never produces.
      std::vector<float> want_wide(n);
      WidenCopy(want.data(), storage, want_wide.data(), n);
      std::vector<float> poisoned_wide(n);
      Poison(poisoned_wide);
      DeviceBuffer d_wide;
      COUPLER_ASSERT_OK(Upload(poisoned_wide, &d_wide));
      COUPLER_ASSERT_OK(WidenCopyCuda(d_dst.as<void>(), storage, d_wide.as<float>(), n));
      std::vector<float> got_wide(n);
      COUPLER_ASSERT_OK(Download(d_wide, &got_wide));
      EXPECT_TRUE(SameBits<float>(want_wide, got_wide));
      EXPECT_TRUE(AllWritten<float>(got_wide, kPoisonFloatBits));
    }
  }
}

TEST(TrainKernelsTest, ScaleCudaMatchesCpu) {
  if (!HaveCudaDevice()) GTEST_SKIP() << "no CUDA device";
  for (const size_t n : kLengths) {
    SCOPED_TRACE(testing::Message() << "n=" << n);
    std::vector<float> x = RandomFloats(n, -100.0f, 100.0f, 500 + n);
    DeviceBuffer d_x;
    COUPLER_ASSERT_OK(Upload(x, &d_x));
    Scale(x.data(), n, 0.37f);
    COUPLER_ASSERT_OK(ScaleCuda(d_x.as<float>(), n, 0.37f));
    std::vector<float> got(n);
    COUPLER_ASSERT_OK(Download(d_x, &got));
    EXPECT_TRUE(SameBits<float>(x, got));  // one rounding per element on both
  }
}

TEST(TrainKernelsTest, AllFiniteCudaMatchesCpu) {
  if (!HaveCudaDevice()) GTEST_SKIP() << "no CUDA device";
  for (const size_t n : kLengths) {
    const std::vector<float> finite = RandomFloats(n, -1e38f, 1e38f, 600 + n);
    for (const float bad : {0.0f, INFINITY, -INFINITY, NAN}) {
      for (const size_t where : {size_t{0}, n / 2, n - 1}) {
        SCOPED_TRACE(testing::Message() << "n=" << n << " " << bad << " at " << where);
        std::vector<float> x = finite;
        if (bad != 0.0f) x[where] = bad;  // true for NaN too
        DeviceBuffer d_x;
        COUPLER_ASSERT_OK(Upload(x, &d_x));
        bool got = !AllFinite(x.data(), n);
        COUPLER_ASSERT_OK(AllFiniteCuda(d_x.as<float>(), n, &got));
        EXPECT_EQ(got, AllFinite(x.data(), n));
        EXPECT_EQ(got, bad == 0.0f);
      }
    }
  }
}

// The optimizer outputs: fp32 state against the CPU, and the fused compute copy exactly the
// rounding of the CUDA run's own updated weights.
void ExpectComputeCopy(const DeviceBuffer& d_copy, Storage storage, const std::vector<float>& w,
                       const std::vector<float>& cpu_w) {
  const size_t n = w.size();
  std::vector<uint8_t> got(n * StorageBytes(storage));
  COUPLER_ASSERT_OK(Download(d_copy, &got));
  std::vector<uint8_t> want(got.size());
  RoundCopy(w.data(), want.data(), storage, n);
  EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size()), 0) << "copy != round(w)";
  std::vector<float> got_wide(n), cpu_wide(n);
  std::vector<uint8_t> cpu_copy(got.size());
  RoundCopy(cpu_w.data(), cpu_copy.data(), storage, n);
  WidenCopy(got.data(), storage, got_wide.data(), n);
  WidenCopy(cpu_copy.data(), storage, cpu_wide.data(), n);
  EXPECT_TRUE(Close(cpu_wide, got_wide, RelTol(storage), 1e-6));
}

TEST(TrainKernelsTest, SgdMomentumStepCudaMatchesCpu) {
  if (!HaveCudaDevice()) GTEST_SKIP() << "no CUDA device";
  uint64_t seed = 700;
  for (const size_t n : kLengths) {
    for (const bool with_copy : {false, true}) {
      for (const Storage storage : kStorages) {
        if (!with_copy && storage != Storage::kFloat32) continue;
        SCOPED_TRACE(testing::Message() << "n=" << n << " copy=" << with_copy << " "
                                        << Name(storage));
        std::vector<float> w = RandomFloats(n, -1.0f, 1.0f, ++seed);
        const std::vector<float> g = RandomFloats(n, -0.5f, 0.5f, ++seed);
        std::vector<float> v = RandomFloats(n, -0.2f, 0.2f, ++seed);
        DeviceBuffer d_w, d_g, d_v, d_copy;
        COUPLER_ASSERT_OK(Upload(w, &d_w));
        COUPLER_ASSERT_OK(Upload(g, &d_g));
        COUPLER_ASSERT_OK(Upload(v, &d_v));
        COUPLER_ASSERT_OK(Upload(std::vector<uint8_t>(n * StorageBytes(storage)), &d_copy));
        COUPLER_ASSERT_OK(PoisonDevice(d_copy));
        SgdMomentumStep(w.data(), g.data(), v.data(), n, 0.05f, 0.9f, 0.01f);
        COUPLER_ASSERT_OK(SgdMomentumStepCuda(d_w.as<float>(), d_g.as<float>(), d_v.as<float>(),
                                              n, 0.05f, 0.9f, 0.01f,
                                              with_copy ? d_copy.as<void>() : nullptr, storage));
        std::vector<float> got_w(n), got_v(n);
        COUPLER_ASSERT_OK(Download(d_w, &got_w));
        COUPLER_ASSERT_OK(Download(d_v, &got_v));
        EXPECT_TRUE(Close(w, got_w, 1e-5, 1e-6));
        EXPECT_TRUE(Close(v, got_v, 1e-5, 1e-6));
        if (with_copy) ExpectComputeCopy(d_copy, storage, got_w, w);
      }
    }
  }
}

TEST(TrainKernelsTest, AdamWStepCudaMatchesCpu) {
  if (!HaveCudaDevice()) GTEST_SKIP() << "no CUDA device";
  const AdamWParams params{/*lr=*/1e-2f, /*beta1=*/0.9f, /*beta2=*/0.999f, /*eps=*/1e-8f,
                           /*weight_decay=*/0.01f};
  uint64_t seed = 800;
  for (const size_t n : kLengths) {
    for (const bool with_copy : {false, true}) {
      for (const Storage storage : kStorages) {
        if (!with_copy && storage != Storage::kFloat32) continue;
        SCOPED_TRACE(testing::Message() << "n=" << n << " copy=" << with_copy << " "
                                        << Name(storage));
        std::vector<float> w = RandomFloats(n, -1.0f, 1.0f, ++seed);
        const std::vector<float> g = RandomFloats(n, -0.5f, 0.5f, ++seed);
        std::vector<float> m = RandomFloats(n, -0.1f, 0.1f, ++seed);
        std::vector<float> v = RandomFloats(n, 0.0f, 0.01f, ++seed);
        DeviceBuffer d_w, d_g, d_m, d_v, d_copy;
        COUPLER_ASSERT_OK(Upload(w, &d_w));
        COUPLER_ASSERT_OK(Upload(g, &d_g));
        COUPLER_ASSERT_OK(Upload(m, &d_m));
        COUPLER_ASSERT_OK(Upload(v, &d_v));
        COUPLER_ASSERT_OK(Upload(std::vector<uint8_t>(n * StorageBytes(storage)), &d_copy));
        COUPLER_ASSERT_OK(PoisonDevice(d_copy));
        AdamWStep(w.data(), g.data(), m.data(), v.data(), n, params, 3);
        COUPLER_ASSERT_OK(AdamWStepCuda(d_w.as<float>(), d_g.as<float>(), d_m.as<float>(),
                                        d_v.as<float>(), n, params, 3,
                                        with_copy ? d_copy.as<void>() : nullptr, storage));
        std::vector<float> got_w(n), got_m(n), got_v(n);
        COUPLER_ASSERT_OK(Download(d_w, &got_w));
        COUPLER_ASSERT_OK(Download(d_m, &got_m));
        COUPLER_ASSERT_OK(Download(d_v, &got_v));
        EXPECT_TRUE(Close(w, got_w, 1e-5, 1e-6));
        EXPECT_TRUE(Close(m, got_m, 1e-5, 1e-9));
        EXPECT_TRUE(Close(v, got_v, 1e-5, 1e-12));
        if (with_copy) ExpectComputeCopy(d_copy, storage, got_w, w);
      }
    }
  }
}

TEST(TrainKernelsTest, AdamWStepCudaRejectsStepZero) {
  if (!HaveCudaDevice()) GTEST_SKIP() << "no CUDA device";
  const Status status = AdamWStepCuda(nullptr, nullptr, nullptr, nullptr, 0, AdamWParams{}, 0);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.ToString();
}

#else  // !COUPLER_WITH_CUDA

// A CPU-only build links the stubs: every twin refuses with Unavailable, naming the build flag.
TEST(TrainKernelsTest, CpuOnlyBuildRefusesTheGpuTwins) {
  float x = 1.0f;
  bool finite = false;
  for (const Status& status :
       {ScaleCuda(&x, 1, 2.0f), AllFiniteCuda(&x, 1, &finite),
        AddBiasActivateCuda(MutMatrix{&x, Storage::kFloat32, 1, 1}, &x, true),
        SgdMomentumStepCuda(&x, &x, &x, 1, 0.1f, 0.9f, 0.0f)}) {
    EXPECT_EQ(status.code(), StatusCode::kUnavailable) << status.ToString();
    EXPECT_NE(status.message().find("COUPLER_WITH_CUDA=OFF"), std::string::npos);
  }
  EXPECT_EQ(x, 1.0f);
}

#endif  // COUPLER_WITH_CUDA

}  // namespace
}  // namespace coupler::kernels
