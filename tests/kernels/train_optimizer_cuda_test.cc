// The CUDA optimizer twins (SGD with momentum, AdamW, each fused with the 16-bit compute-copy
// write) against the CPU ones. Needs a GPU (skipped without one); a CPU-only build checks that
// the twins answer Unavailable.
#include "tests/kernels/train_cuda_test_util.h"

namespace coupler::kernels {
namespace {

#if defined(COUPLER_WITH_CUDA)

using namespace train_cuda_test;

// The optimizer outputs: fp32 state against the CPU, and the fused compute copy exactly the
// rounding of the CUDA run's own updated weights.
void ExpectComputeCopy(const DeviceBuffer& d_copy, ElementType storage, const std::vector<float>& w,
                       const std::vector<float>& cpu_w) {
  const size_t n = w.size();
  std::vector<uint8_t> got(n * StorageBytes(storage));
  COUPLER_ASSERT_OK(Download(d_copy, &got));
  std::vector<uint8_t> want(got.size());
  COUPLER_ASSERT_OK(RoundCopy(w.data(), want.data(), storage, n));
  EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size()), 0) << "copy != round(w)";
  std::vector<float> got_wide(n), cpu_wide(n);
  std::vector<uint8_t> cpu_copy(got.size());
  COUPLER_ASSERT_OK(RoundCopy(cpu_w.data(), cpu_copy.data(), storage, n));
  COUPLER_ASSERT_OK(WidenCopy(got.data(), storage, got_wide.data(), n));
  COUPLER_ASSERT_OK(WidenCopy(cpu_copy.data(), storage, cpu_wide.data(), n));
  EXPECT_TRUE(Close(cpu_wide, got_wide, RelTol(storage), 1e-6));
}

TEST(TrainKernelsTest, SgdMomentumStepCudaMatchesCpu) {
  if (!HaveCudaDevice()) GTEST_SKIP() << "no CUDA device";
  uint64_t seed = 700;
  for (const size_t n : kLengths) {
    for (const bool with_copy : {false, true}) {
      for (const ElementType storage : kStorages) {
        if (!with_copy && storage != ElementType::kFloat32) continue;
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
        COUPLER_ASSERT_OK(SgdMomentumStep(w.data(), g.data(), v.data(), n, 0.05f, 0.9f, 0.01f));
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
      for (const ElementType storage : kStorages) {
        if (!with_copy && storage != ElementType::kFloat32) continue;
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
        COUPLER_ASSERT_OK(AdamWStep(w.data(), g.data(), m.data(), v.data(), n, params, 3));
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

// A CPU-only build has no CUDA table: asking for it is Unavailable, naming the build flag.
TEST(TrainKernelsTest, CpuOnlyBuildRefusesTheGpuTwins) {
  const Status status = CudaTrainKernels().status();
  EXPECT_EQ(status.code(), StatusCode::kUnavailable) << status.ToString();
  EXPECT_NE(status.message().find("COUPLER_WITH_CUDA=OFF"), std::string::npos);
}

#endif  // COUPLER_WITH_CUDA

}  // namespace
}  // namespace coupler::kernels
