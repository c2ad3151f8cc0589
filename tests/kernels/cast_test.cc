// cast: exact fp16/bf16 bits from the CPU twin, argument errors, CUDA parity on a GPU machine.
#include "kernels/cast.h"

#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/cuda/batch_cuda.h"
#include "kernels/device.h"
#include "runtime/precision/half.h"
#include "tests/kernels/kernel_test_util.h"

namespace coupler::kernels {
namespace {


constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

uint16_t PoisonFor(ElementType format) {
  return format == ElementType::kFloat16 ? kPoisonFp16Bits : kPoisonBf16Bits;
}

TEST(KernelsTest, CastCpuFp16KnownValues) {
  const std::vector<float> in = {1.0f, -2.0f,    65504.0f, 65520.0f, -kInf,      0x1p-24f,
                                 0x1p-25f, 0x1.8p-24f, 0.1f,  kNan,     -0.0f, 1e-10f};
  const std::vector<uint16_t> want = {0x3C00, 0xC000, 0x7BFF, 0x7C00, 0xFC00, 0x0001,
                                      0x0000, 0x0002, 0x2E66, 0x7E00, 0x8000, 0x0000};
  std::vector<uint16_t> out(in.size());
  Poison(out, kPoisonFp16Bits);
  COUPLER_ASSERT_OK(Cast(in, out, ElementType::kFloat16, Backend::kCpu));
  EXPECT_TRUE(SameBits<uint16_t>(want, out));
}

TEST(KernelsTest, CastCpuBf16KnownValues) {
  const std::vector<float> in = {1.0f, 0.1f, precision::Float32FromBits(0x3F808000u),
                                 precision::Float32FromBits(0x3F818000u), 3.4028235e38f, kNan,
                                 -kInf, 0x1p-133f};
  const std::vector<uint16_t> want = {0x3F80, 0x3DCD, 0x3F80, 0x3F82,
                                      0x7F80, 0x7FC0, 0xFF80, 0x0001};
  std::vector<uint16_t> out(in.size());
  Poison(out, kPoisonBf16Bits);
  COUPLER_ASSERT_OK(Cast(in, out, ElementType::kBFloat16, Backend::kCpu));
  EXPECT_TRUE(SameBits<uint16_t>(want, out));
}

TEST(KernelsTest, CastCpuMatchesPrecisionHelpers) {
  for (ElementType format : {ElementType::kFloat16, ElementType::kBFloat16}) {
    for (size_t n : {size_t{0}, size_t{1}, size_t{15}, size_t{1} << 20 | 9}) {
      SCOPED_TRACE(std::string(precision::HalfFormatName(format)) + " n=" + std::to_string(n));
      const std::vector<float> in = RandomColumn(n, 2000 + n);
      std::vector<uint16_t> want(n);
      for (size_t i = 0; i < n; ++i) want[i] = precision::EncodeHalf(in[i], format);
      std::vector<uint16_t> out(n);
      Poison(out, PoisonFor(format));
      COUPLER_ASSERT_OK(Cast(in, out, format, Backend::kCpu));
      EXPECT_TRUE(SameBits<uint16_t>(want, out));
      EXPECT_TRUE(AllWritten<uint16_t>(out, PoisonFor(format)));
    }
  }
}

TEST(KernelsTest, CastRejectsBadArguments) {
  std::vector<float> in(4, 1.0f);
  std::vector<uint16_t> long_out(5);
  Status s = Cast(in, long_out, ElementType::kFloat16, Backend::kCpu);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("cast"), std::string::npos) << s.message();

  // Casting a column onto its own storage would overwrite input a parallel backend still needs.
  std::vector<float> column(4, 1.0f);
  auto* alias = reinterpret_cast<uint16_t*>(column.data());
  s = Cast(column, std::span<uint16_t>(alias, 4), ElementType::kBFloat16, Backend::kCpu);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("overlap"), std::string::npos) << s.message();
}

constexpr size_t kParitySizes[] = {1, 1000, (size_t{1} << 20) + 1, (size_t{3} << 20) + 7,
                                   kCudaChunkElements + 1001};

TEST(KernelsTest, CudaCastMatchesCpu) {
  if (!HaveCudaDevice()) GTEST_SKIP() << "no CUDA device";
  for (ElementType format : {ElementType::kFloat16, ElementType::kBFloat16}) {
    for (size_t n : kParitySizes) {
      SCOPED_TRACE(std::string(precision::HalfFormatName(format)) + " n=" + std::to_string(n));
      const std::vector<float> in = RandomColumn(n, 4242 + n);
      std::vector<uint16_t> cpu(n);
      std::vector<uint16_t> gpu(n);
      Poison(cpu, PoisonFor(format));
      Poison(gpu, PoisonFor(format));
      COUPLER_ASSERT_OK(Cast(in, cpu, format, Backend::kCpu));
      COUPLER_ASSERT_OK(Cast(in, gpu, format, Backend::kCuda));
      ASSERT_TRUE(AllWritten<uint16_t>(gpu, PoisonFor(format)));
      EXPECT_TRUE(SameBits<uint16_t>(cpu, gpu));
    }
  }
}

}  // namespace
}  // namespace coupler::kernels
