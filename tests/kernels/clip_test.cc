// clip: exact outputs on the CPU twin, argument errors, and CUDA parity on a GPU machine.
#include "kernels/clip.h"

#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/cuda/batch_cuda.h"
#include "kernels/device.h"
#include "kernels/elementwise.h"
#include "tests/kernels/kernel_test_util.h"

namespace coupler::kernels {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kLo = -1.5f;
constexpr float kHi = 2.25f;

// Independent of ClipValue: NaN first, then std::clamp semantics.
float ReferenceClip(float v, float lo, float hi) {
  if (std::isnan(v)) return v;
  return v < lo ? lo : (hi < v ? hi : v);
}

TEST(KernelsTest, ClipCpuBoundsValues) {
  const std::vector<float> in = {-kInf, -3.0f, -1.5f, -1.4999999f, -0.0f, 0.0f,
                                 1.0f,  2.25f, 2.2500002f, 1e30f, kInf};
  const std::vector<float> want = {-1.5f, -1.5f, -1.5f, -1.4999999f, -0.0f, 0.0f,
                                   1.0f,  2.25f, 2.25f, 2.25f, 2.25f};
  std::vector<float> out(in.size());
  Poison(out);
  COUPLER_ASSERT_OK(Clip(in, out, kLo, kHi, Backend::kCpu));
  EXPECT_TRUE(SameBits<float>(want, out));
}

// Decision: NaN stays NaN, bits untouched. Clamping it to a bound would hide a data fault.
TEST(KernelsTest, ClipCpuKeepsNan) {
  const float qnan = std::numeric_limits<float>::quiet_NaN();
  const float negative_nan = precision::Float32FromBits(0xFFC01234u);
  const std::vector<float> in = {qnan, 5.0f, negative_nan};
  std::vector<float> out(in.size());
  COUPLER_ASSERT_OK(Clip(in, out, 0.0f, 1.0f, Backend::kCpu));
  EXPECT_TRUE(std::isnan(out[0]));
  EXPECT_EQ(out[1], 1.0f);
  EXPECT_EQ(precision::Float32Bits(out[2]), 0xFFC01234u);
}

TEST(KernelsTest, ClipCpuInPlace) {
  std::vector<float> data = {-10.0f, 0.5f, 10.0f};
  COUPLER_ASSERT_OK(Clip(std::span<float>(data), 0.0f, 1.0f, Backend::kCpu));
  EXPECT_EQ(data, (std::vector<float>{0.0f, 0.5f, 1.0f}));
}

TEST(KernelsTest, ClipCpuEqualBoundsGiveConstant) {
  std::vector<float> data = {-kInf, 0.0f, 7.0f};
  COUPLER_ASSERT_OK(Clip(std::span<float>(data), 3.0f, 3.0f, Backend::kCpu));
  EXPECT_EQ(data, (std::vector<float>{3.0f, 3.0f, 3.0f}));
}

// Odd lengths exercise the vectorized loops' remainders; the reference is element by element.
TEST(KernelsTest, ClipCpuMatchesReferenceOnRandomColumns) {
  for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{33}, size_t{1} << 20 | 5}) {
    SCOPED_TRACE(n);
    const std::vector<float> in = RandomColumn(n, 1000 + n);
    std::vector<float> want(n);
    for (size_t i = 0; i < n; ++i) want[i] = ReferenceClip(in[i], kLo, kHi);

    std::vector<float> out(n);
    Poison(out);
    COUPLER_ASSERT_OK(Clip(in, out, kLo, kHi, Backend::kCpu));
    EXPECT_TRUE(SameBits<float>(want, out));

    std::vector<float> in_place = in;
    COUPLER_ASSERT_OK(Clip(std::span<float>(in_place), kLo, kHi, Backend::kCpu));
    EXPECT_TRUE(SameBits<float>(want, in_place));
  }
}

TEST(KernelsTest, ClipRejectsBadArguments) {
  std::vector<float> in(8, 1.0f);
  std::vector<float> short_out(7);
  Status s = Clip(in, short_out, 0.0f, 1.0f, Backend::kCpu);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("7 elements"), std::string::npos) << s.message();

  std::vector<float> out(8);
  s = Clip(in, out, 2.0f, 1.0f, Backend::kCpu);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("lo <= hi"), std::string::npos) << s.message();
  EXPECT_EQ(Clip(in, out, std::nanf(""), 1.0f, Backend::kCpu).code(),
            StatusCode::kInvalidArgument);

  // Shifted by one element: a sequential loop would read values it already overwrote.
  std::vector<float> buffer(9, 1.0f);
  s = Clip(std::span<const float>(buffer.data(), 8), std::span<float>(buffer.data() + 1, 8), 0.0f,
           1.0f, Backend::kCpu);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("overlap"), std::string::npos) << s.message();
}

TEST(KernelsTest, GpuBackendUnavailableWithoutDevice) {
  if (HaveCudaDevice()) GTEST_SKIP() << "a CUDA device is present";
  std::vector<float> data = {1.0f, 2.0f};
  const Status s = Clip(std::span<float>(data), 0.0f, 1.0f, Backend::kCuda);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  EXPECT_NE(s.message().find("clip"), std::string::npos) << s.message();
  EXPECT_EQ(data, (std::vector<float>{1.0f, 2.0f})) << "a failed call must not touch the data";
}

// 1M+ elements and one column longer than a device chunk, so chunk seams are covered.
constexpr size_t kParitySizes[] = {1, 1000, (size_t{1} << 20) + 1, (size_t{3} << 20) + 7,
                                   kCudaChunkElements + 1001};

TEST(KernelsTest, CudaClipMatchesCpu) {
  if (!HaveCudaDevice()) GTEST_SKIP() << "no CUDA device";
  for (size_t n : kParitySizes) {
    SCOPED_TRACE(n);
    const std::vector<float> in = RandomColumn(n, 42 + n);
    std::vector<float> cpu(n);
    std::vector<float> gpu(n);
    Poison(cpu);
    Poison(gpu);
    COUPLER_ASSERT_OK(Clip(in, cpu, kLo, kHi, Backend::kCpu));
    COUPLER_ASSERT_OK(Clip(in, gpu, kLo, kHi, Backend::kCuda));
    ASSERT_TRUE(AllWritten<float>(gpu, kPoisonFloatBits));
    EXPECT_TRUE(SameBits<float>(cpu, gpu));
  }
}

TEST(KernelsTest, CudaClipInPlaceMatchesCpu) {
  if (!HaveCudaDevice()) GTEST_SKIP() << "no CUDA device";
  const size_t n = (size_t{1} << 20) + 3;
  const std::vector<float> in = RandomColumn(n, 7);
  std::vector<float> cpu = in;
  std::vector<float> gpu = in;
  COUPLER_ASSERT_OK(Clip(std::span<float>(cpu), -0.25f, 0.75f, Backend::kCpu));
  COUPLER_ASSERT_OK(Clip(std::span<float>(gpu), -0.25f, 0.75f, Backend::kCuda));
  EXPECT_TRUE(SameBits<float>(cpu, gpu));
}

}  // namespace
}  // namespace coupler::kernels
