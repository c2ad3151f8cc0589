// The CUDA twins of the element-wise training kernels against the CPU ones, on fresh random
// inputs, for every storage format: outputs poisoned before each CUDA run so an unwritten
// element shows. Needs a GPU (skipped without one).
#include "tests/kernels/train_cuda_test_util.h"
#include <cstring>

namespace coupler::kernels {
namespace {

#if defined(COUPLER_WITH_CUDA)

using namespace train_cuda_test;

TEST(TrainKernelsTest, AddBiasActivateCudaMatchesCpu) {
  if (!HaveCudaDevice()) GTEST_SKIP() << "no CUDA device";
  uint64_t seed = 1;
  for (const ElementType storage : kStorages) {
    for (const Shape shape : kShapes) {
      for (const bool relu : {false, true}) {
        SCOPED_TRACE(testing::Message() << Name(storage) << " " << shape.rows << "x"
                                        << shape.cols << " relu=" << relu);
        HostMatrix y = RandomMatrix(storage, shape.rows, shape.cols, -4.0f, 4.0f, ++seed);
        const std::vector<float> bias = RandomFloats(shape.cols, -2.0f, 2.0f, ++seed);
        DeviceBuffer d_y, d_bias;
        COUPLER_ASSERT_OK(Upload(y.bytes, &d_y));
        COUPLER_ASSERT_OK(Upload(bias, &d_bias));
        COUPLER_ASSERT_OK(AddBiasActivate(y.Mut(), bias.data(), relu));
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
  for (const ElementType y_storage : kStorages) {
    for (const ElementType dy_storage : kStorages) {
      for (const Shape shape : kShapes) {
        SCOPED_TRACE(testing::Message() << "y " << Name(y_storage) << ", dy " << Name(dy_storage)
                                        << " " << shape.rows << "x" << shape.cols);
        std::vector<float> y_values = RandomFloats(shape.rows * shape.cols, -1.0f, 1.0f, ++seed);
        for (size_t i = 0; i < y_values.size(); i += 7) y_values[i] = 0.0f;  // masked
        for (size_t i = 3; i < y_values.size(); i += 11) y_values[i] = -0.0f;
        HostMatrix y{y_storage, shape.rows, shape.cols,
                     std::vector<uint8_t>(y_values.size() * StorageBytes(y_storage))};
        COUPLER_ASSERT_OK(RoundCopy(y_values.data(), y.bytes.data(), y_storage, y_values.size()));
        HostMatrix dy = RandomMatrix(dy_storage, shape.rows, shape.cols, -3.0f, 3.0f, ++seed);
        DeviceBuffer d_y, d_dy;
        COUPLER_ASSERT_OK(Upload(y.bytes, &d_y));
        COUPLER_ASSERT_OK(Upload(dy.bytes, &d_dy));
        COUPLER_ASSERT_OK(ReluBackward(y.Const(), dy.Mut()));
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
  for (const ElementType storage : kStorages) {
    for (const Shape shape : kShapes) {
      SCOPED_TRACE(testing::Message() << Name(storage) << " " << shape.rows << "x" << shape.cols);
      const HostMatrix dy = RandomMatrix(storage, shape.rows, shape.cols, -1.0f, 1.0f, ++seed);
      std::vector<float> bias_grad = RandomFloats(shape.cols, -1.0f, 1.0f, ++seed);
      DeviceBuffer d_dy, d_grad;
      COUPLER_ASSERT_OK(Upload(dy.bytes, &d_dy));
      COUPLER_ASSERT_OK(Upload(bias_grad, &d_grad));
      COUPLER_ASSERT_OK(BiasGradAccumulate(dy.Const(), bias_grad.data()));
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
  for (const ElementType in_storage : kStorages) {
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
        const double want = CpuLossSum(logits.Const(), labels.data(), grad_scale, nullptr,
                                       &want_correct);
        double got = NAN;
        COUPLER_ASSERT_OK(SoftmaxCrossEntropyCuda(logits.ConstOn(d_logits),
                                                  d_labels.as<int32_t>(), grad_scale, nullptr,
                                                  &got, &got_correct));
        EXPECT_NEAR(got, want, 1e-5 * std::abs(want) + 1e-9);
        EXPECT_EQ(got_correct, want_correct);
      }
      for (const ElementType out_storage : kStorages) {
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
        const double want = CpuLossSum(logits.Const(), labels.data(), grad_scale, &host_out,
                                       &want_correct);
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
  const HostMatrix logits = RandomMatrix(ElementType::kFloat32, 4, 6, -1.0f, 1.0f, 7);
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

TEST(TrainKernelsTest, RoundAndWidenCopyCudaMatchCpu) {
  if (!HaveCudaDevice()) GTEST_SKIP() << "no CUDA device";
  uint64_t seed = 400;
  for (const ElementType storage : kStorages) {
    for (const size_t n : kLengths) {
      SCOPED_TRACE(testing::Message() << Name(storage) << " n=" << n);
      // Every float class (NaN, inf, subnormals, rounding ties): these copies must be exact.
      const std::vector<float> src = RandomColumn(n, ++seed);
      const size_t width = StorageBytes(storage);
      std::vector<uint8_t> want(n * width);
      COUPLER_ASSERT_OK(RoundCopy(src.data(), want.data(), storage, n));
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
      COUPLER_ASSERT_OK(WidenCopy(want.data(), storage, want_wide.data(), n));
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
    COUPLER_ASSERT_OK(Scale(x.data(), n, 0.37f));
    COUPLER_ASSERT_OK(ScaleCuda(d_x.as<float>(), n, 0.37f));
    std::vector<float> got(n);
    COUPLER_ASSERT_OK(Download(d_x, &got));
    EXPECT_TRUE(SameBits<float>(x, got));  // one rounding per element on both
  }
}

// Gradient clipping's squared norm: both sum in double, grouped differently, so they agree to
// double rounding (far below float's), and the device's is the same on every call.
TEST(TrainKernelsTest, SumSquaresCudaMatchesCpu) {
  if (!HaveCudaDevice()) GTEST_SKIP() << "no CUDA device";
  for (const size_t n : kLengths) {
    SCOPED_TRACE(testing::Message() << "n=" << n);
    const std::vector<float> x = RandomFloats(n, -100.0f, 100.0f, 700 + n);
    DeviceBuffer d_x;
    COUPLER_ASSERT_OK(Upload(x, &d_x));
    double cpu = -1, gpu = -1, again = -2;
    COUPLER_ASSERT_OK(SumSquares(x.data(), n, &cpu));
    COUPLER_ASSERT_OK(SumSquaresCuda(d_x.as<float>(), n, &gpu));
    COUPLER_ASSERT_OK(SumSquaresCuda(d_x.as<float>(), n, &again));
    EXPECT_NEAR(gpu, cpu, 1e-12 * cpu);
    EXPECT_EQ(gpu, again);
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
        bool got = !CpuAllFinite(x.data(), n);
        COUPLER_ASSERT_OK(AllFiniteCuda(d_x.as<float>(), n, &got));
        EXPECT_EQ(got, CpuAllFinite(x.data(), n));
        EXPECT_EQ(got, bad == 0.0f);
      }
    }
  }
}

TEST(TrainKernelsTest, UnscaleAllFiniteCudaMatchesScaleThenCheckOnCpu) {
  if (!HaveCudaDevice()) GTEST_SKIP() << "no CUDA device";
  for (const size_t n : kLengths) {
    // Large values overflow when unscaled by 4: the fused pass must check the product.
    std::vector<float> x = RandomFloats(n, -1e38f, 1e38f, 700 + n);
    for (const float s : {1.0f / 65536.0f, 4.0f}) {
      SCOPED_TRACE(testing::Message() << "n=" << n << " s=" << s);
      std::vector<float> want = x;
      COUPLER_ASSERT_OK(Scale(want.data(), n, s));
      DeviceBuffer d_x;
      COUPLER_ASSERT_OK(Upload(x, &d_x));
      bool got = !CpuAllFinite(want.data(), n);
      COUPLER_ASSERT_OK(UnscaleAllFiniteCuda(d_x.as<float>(), n, s, &got));
      EXPECT_EQ(got, CpuAllFinite(want.data(), n));
      std::vector<float> back(n);
      COUPLER_ASSERT_OK(Download(d_x, &back));
      EXPECT_EQ(0, std::memcmp(back.data(), want.data(), n * sizeof(float)));
    }
  }
}

#endif  // COUPLER_WITH_CUDA

}  // namespace
}  // namespace coupler::kernels
