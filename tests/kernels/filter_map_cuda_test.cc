// filter_map's and compact's CUDA twins against the CPU twins: the same keep flags, kept count
// and kept values in the same order, for every float class and threshold, across a chunk seam
// (where each chunk's kept rows must follow the previous chunk's); Unavailable without a device.
#include "kernels/filter_map.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/cuda/batch_cuda.h"
#include "kernels/device.h"
#include "tests/kernels/kernel_test_util.h"

namespace coupler::kernels {
namespace {

constexpr uint8_t kPoisonKeep = 0xA5;  // neither 0 nor 1, which is all filter_map writes

// Kept roots are NaN where a negative product passes a -inf threshold; x86 gives its own NaN
// there and GPUs a canonical one, so NaNs compare as "NaN on both sides", all else bit for bit.
std::vector<float> CanonicalNans(std::vector<float> column) {
  for (float& v : column) {
    if (std::isnan(v)) v = precision::Float32FromBits(0x7FC00000u);
  }
  return column;
}

struct Outputs {
  std::vector<uint8_t> keep;
  std::vector<float> value;  // the first `kept` values only
  size_t kept = 0;
};

Outputs RunFilterMap(const std::vector<float>& a, const std::vector<float>& b, double threshold,
                     Backend backend) {
  Outputs out;
  out.keep.assign(a.size(), kPoisonKeep);
  out.value.resize(a.size());
  Poison(out.value);
  auto kept = FilterMap(a, b, threshold, out.keep, out.value, backend);
  EXPECT_TRUE(kept.ok()) << kept.status().ToString();
  out.kept = kept.ok() ? *kept : 0;
  out.value.resize(out.kept);
  return out;
}

void ExpectSame(const Outputs& cpu, const Outputs& gpu) {
  ASSERT_EQ(cpu.kept, gpu.kept);
  EXPECT_EQ(cpu.keep, gpu.keep);
  EXPECT_TRUE(AllWritten<float>(gpu.value, kPoisonFloatBits));
  EXPECT_TRUE(SameBits<float>(CanonicalNans(cpu.value), CanonicalNans(gpu.value)));
}

constexpr double kThresholds[] = {0.0, -1.0, 0.1, 2.5e-7, 1e30, -INFINITY, INFINITY, NAN, 1e300};

TEST(FilterMapBackend, NoDeviceIsUnavailable) {
  if (HaveCudaDevice()) GTEST_SKIP() << "a CUDA device is present";
  const std::vector<float> a = {1.0f, 2.0f};
  std::vector<uint8_t> keep(2, 7);
  std::vector<float> value(2, 5.0f);
  auto kept = FilterMap(a, a, 0.0, keep, value, Backend::kCuda);
  EXPECT_EQ(kept.status().code(), StatusCode::kUnavailable) << kept.status().ToString();
  EXPECT_NE(kept.status().message().find("filter_map"), std::string::npos);
  EXPECT_EQ(keep, (std::vector<uint8_t>{7, 7})) << "a failed call must not touch the outputs";

  std::vector<float> out(2);
  auto compacted = Compact<float>(a, keep, out, Backend::kCuda);
  EXPECT_EQ(compacted.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(compacted.status().message().find("compact"), std::string::npos);
}

TEST(FilterMapCudaTest, MatchesCpuForEveryThreshold) {
  if (!HaveCudaDevice()) GTEST_SKIP() << "no CUDA device";
  for (size_t n : {size_t{1}, size_t{3}, size_t{4097}, (size_t{1} << 20) + 7}) {
    const std::vector<float> a = RandomColumn(n, 800 + n);
    const std::vector<float> b = RandomColumn(n, 900 + n);
    for (const double threshold : kThresholds) {
      SCOPED_TRACE("n=" + std::to_string(n) + " threshold=" + std::to_string(threshold));
      ExpectSame(RunFilterMap(a, b, threshold, Backend::kCpu),
                 RunFilterMap(a, b, threshold, Backend::kCuda));
    }
  }
}

// Finite, positive thresholds: no root may be NaN, and every bit must match.
TEST(FilterMapCudaTest, FiniteProductsMatchCpuExactly) {
  if (!HaveCudaDevice()) GTEST_SKIP() << "no CUDA device";
  const size_t n = 100'003;
  SplitMix64 rng(5);
  std::vector<float> a(n);
  std::vector<float> b(n);
  for (size_t i = 0; i < n; ++i) {
    a[i] = rng.Uniform(-4.0f, 4.0f);
    b[i] = rng.Uniform(-4.0f, 4.0f);
  }
  const Outputs cpu = RunFilterMap(a, b, 0.5, Backend::kCpu);
  const Outputs gpu = RunFilterMap(a, b, 0.5, Backend::kCuda);
  ASSERT_GT(gpu.kept, n / 4);
  for (float v : gpu.value) ASSERT_FALSE(std::isnan(v));
  ASSERT_EQ(cpu.keep, gpu.keep);
  EXPECT_TRUE(SameBits<float>(cpu.value, gpu.value));
}

// Two chunks: the second chunk's kept roots must land right after the first chunk's.
TEST(FilterMapCudaTest, CrossesAChunkSeam) {
  if (!HaveCudaDevice()) GTEST_SKIP() << "no CUDA device";
  const size_t n = kCudaChunkElements + 1001;
  const std::vector<float> a = RandomColumn(n, 31);
  const std::vector<float> b = RandomColumn(n, 37);
  const Outputs cpu = RunFilterMap(a, b, 0.0, Backend::kCpu);
  const Outputs gpu = RunFilterMap(a, b, 0.0, Backend::kCuda);
  ExpectSame(cpu, gpu);
}

// Random bits of every type's width, NaN payloads included for the floating types: Compact only
// moves values, so it must be bit-exact whatever they are.
template <typename T>
std::vector<T> RandomBits(size_t n, uint64_t seed) {
  SplitMix64 rng(seed);
  std::vector<T> column(n);
  for (T& v : column) {
    const uint64_t bits = rng.Next();
    std::memcpy(&v, &bits, sizeof(T));
  }
  return column;
}

template <typename T>
void ExpectCompactMatchesCpu(size_t n, uint64_t seed) {
  SCOPED_TRACE(n);
  const std::vector<T> in = RandomBits<T>(n, seed);
  std::vector<uint8_t> keep(n);
  SplitMix64 rng(seed + 1);
  // Flags other than 1 count as kept too, as on the CPU.
  for (uint8_t& k : keep) k = rng.Next() % 3 == 0 ? 0 : static_cast<uint8_t>(rng.Next() | 1);
  std::vector<T> cpu(n);
  std::vector<T> gpu(n);
  // Poison: an element the GPU never wrote keeps these bytes and differs from the CPU's.
  std::memset(gpu.data(), 0xA5, n * sizeof(T));
  auto cpu_kept = Compact<T>(in, keep, cpu, Backend::kCpu);
  auto gpu_kept = Compact<T>(in, keep, gpu, Backend::kCuda);
  ASSERT_TRUE(cpu_kept.ok() && gpu_kept.ok()) << gpu_kept.status().ToString();
  ASSERT_EQ(*cpu_kept, *gpu_kept);
  EXPECT_EQ(std::memcmp(cpu.data(), gpu.data(), *cpu_kept * sizeof(T)), 0);
}

TEST(CompactCudaTest, MatchesCpuBitForBitForEveryType) {
  if (!HaveCudaDevice()) GTEST_SKIP() << "no CUDA device";
  for (size_t n : {size_t{1}, size_t{5}, size_t{4099}, (size_t{1} << 20) + 9}) {
    ExpectCompactMatchesCpu<float>(n, 40 + n);
    ExpectCompactMatchesCpu<int32_t>(n, 50 + n);
    ExpectCompactMatchesCpu<uint16_t>(n, 60 + n);
    ExpectCompactMatchesCpu<double>(n, 70 + n);
  }
}

TEST(CompactCudaTest, CrossesAChunkSeam) {
  if (!HaveCudaDevice()) GTEST_SKIP() << "no CUDA device";
  ExpectCompactMatchesCpu<float>(kCudaChunkElements + 1001, 3);
}

TEST(CompactCudaTest, NothingOrEverythingKept) {
  if (!HaveCudaDevice()) GTEST_SKIP() << "no CUDA device";
  const std::vector<int32_t> in = {4, -1, 7};
  std::vector<int32_t> out(3, 0);
  auto none = Compact<int32_t>(in, std::vector<uint8_t>(3, 0), out, Backend::kCuda);
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_EQ(*none, 0u);
  EXPECT_EQ(out, (std::vector<int32_t>{0, 0, 0}));
  auto all = Compact<int32_t>(in, std::vector<uint8_t>(3, 1), out, Backend::kCuda);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_EQ(out, in);
  auto empty = Compact<int32_t>({}, {}, std::span<int32_t>(), Backend::kCuda);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(*empty, 0u);
}

}  // namespace
}  // namespace coupler::kernels
