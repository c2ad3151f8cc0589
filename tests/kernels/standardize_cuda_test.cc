// standardize's CUDA twin: the same bits as the CPU twin on every float class, in place or not,
// across a chunk seam; and Unavailable, untouched data, where there is no device.
#include "kernels/standardize.h"

#include <cmath>
#include <limits>
#include <span>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/cuda/batch_cuda.h"
#include "kernels/device.h"
#include "tests/kernels/kernel_test_util.h"

namespace coupler::kernels {
namespace {

// GPUs return one canonical NaN from arithmetic while x86 keeps the input's payload, so NaN
// outputs are compared as "NaN on both sides": every NaN becomes the same quiet NaN, and every
// other value (signed zeros included) must still match bit for bit.
std::vector<float> CanonicalNans(std::vector<float> column) {
  for (float& v : column) {
    if (std::isnan(v)) v = precision::Float32FromBits(0x7FC00000u);
  }
  return column;
}

struct Scaling {
  double mean;
  double stddev;
};

// A centred column, a mean that dwarfs the stddev (the float64 path matters there), a constant
// column (stddev 0: multiply by 0), and a huge stddev that flushes values towards subnormals.
constexpr Scaling kScalings[] = {{0.25, 2.5}, {1.0e5, 3.0}, {-7.0, 0.0}, {0.0, 1.0e38}};

constexpr size_t kSizes[] = {1, 7, 1001, (size_t{1} << 20) + 3, kCudaChunkElements + 1001};

TEST(StandardizeBackend, NoDeviceIsUnavailable) {
  if (HaveCudaDevice()) GTEST_SKIP() << "a CUDA device is present";
  std::vector<float> data = {1.0f, 2.0f, 3.0f};
  const Status s = Standardize(data, data, 2.0, 1.0, Backend::kCuda);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  EXPECT_NE(s.message().find("standardize"), std::string::npos) << s.message();
  EXPECT_EQ(data, (std::vector<float>{1.0f, 2.0f, 3.0f})) << "a failed call must not touch data";
}

TEST(StandardizeCudaTest, MatchesCpuOnEveryFloatClass) {
  if (!HaveCudaDevice()) GTEST_SKIP() << "no CUDA device";
  for (size_t n : kSizes) {
    const std::vector<float> in = RandomColumn(n, 300 + n);
    for (const Scaling& scaling : kScalings) {
      SCOPED_TRACE("n=" + std::to_string(n) + " mean=" + std::to_string(scaling.mean) +
                   " stddev=" + std::to_string(scaling.stddev));
      std::vector<float> cpu(n);
      std::vector<float> gpu(n);
      Poison(cpu);
      Poison(gpu);
      COUPLER_ASSERT_OK(Standardize(in, cpu, scaling.mean, scaling.stddev, Backend::kCpu));
      COUPLER_ASSERT_OK(Standardize(in, gpu, scaling.mean, scaling.stddev, Backend::kCuda));
      ASSERT_TRUE(AllWritten<float>(gpu, kPoisonFloatBits));
      EXPECT_TRUE(SameBits<float>(CanonicalNans(cpu), CanonicalNans(gpu)));
    }
  }
}

// Finite inputs only: here no NaN may appear on either side, and the bits match exactly.
TEST(StandardizeCudaTest, FiniteColumnsMatchCpuExactly) {
  if (!HaveCudaDevice()) GTEST_SKIP() << "no CUDA device";
  const size_t n = (size_t{1} << 18) + 5;
  SplitMix64 rng(99);
  std::vector<float> in(n);
  for (float& v : in) v = 1.0e5f + rng.Uniform(-3.0f, 3.0f);
  std::vector<float> cpu(n);
  std::vector<float> gpu(n);
  Poison(gpu);
  COUPLER_ASSERT_OK(Standardize(in, cpu, 1.0e5, 1.7320508, Backend::kCpu));
  COUPLER_ASSERT_OK(Standardize(in, gpu, 1.0e5, 1.7320508, Backend::kCuda));
  for (float v : gpu) ASSERT_FALSE(std::isnan(v));
  EXPECT_TRUE(SameBits<float>(cpu, gpu));
}

// Missing values (NaN) stay missing on the device, exactly where they were, and the values
// around them match the CPU bit for bit.
TEST(StandardizeCudaTest, MissingValuesStayMissingLikeTheCpu) {
  if (!HaveCudaDevice()) GTEST_SKIP() << "no CUDA device";
  for (size_t n : kSizes) {
    SCOPED_TRACE(n);
    SplitMix64 rng(500 + n);
    std::vector<float> in(n);
    for (float& v : in) v = rng.Uniform(-50.0f, 50.0f);
    for (size_t i = 3; i < n; i += 17) in[i] = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> cpu(n);
    std::vector<float> gpu(n);
    COUPLER_ASSERT_OK(Standardize(in, cpu, 0.5, 2.0, Backend::kCpu));
    COUPLER_ASSERT_OK(Standardize(in, gpu, 0.5, 2.0, Backend::kCuda));
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(std::isnan(in[i]), std::isnan(gpu[i])) << i;
    EXPECT_TRUE(SameBits<float>(CanonicalNans(cpu), CanonicalNans(gpu)));
  }
}

TEST(StandardizeCudaTest, InPlaceMatchesCpu) {
  if (!HaveCudaDevice()) GTEST_SKIP() << "no CUDA device";
  for (size_t n : {size_t{33}, (size_t{1} << 20) + 1}) {
    SCOPED_TRACE(n);
    const std::vector<float> in = RandomColumn(n, 77 + n);
    std::vector<float> cpu = in;
    std::vector<float> gpu = in;
    COUPLER_ASSERT_OK(Standardize(cpu, cpu, -3.5, 0.75, Backend::kCpu));
    COUPLER_ASSERT_OK(Standardize(gpu, gpu, -3.5, 0.75, Backend::kCuda));
    EXPECT_TRUE(SameBits<float>(CanonicalNans(cpu), CanonicalNans(gpu)));
  }
}

TEST(StandardizeCudaTest, EmptyColumnIsOk) {
  if (!HaveCudaDevice()) GTEST_SKIP() << "no CUDA device";
  std::vector<float> empty;
  COUPLER_ASSERT_OK(Standardize(empty, empty, 0.0, 1.0, Backend::kCuda));
}

}  // namespace
}  // namespace coupler::kernels
