// int8_gemm's CUDA twin against the CPU twin, bit for bit: u8 and s8 activations, shapes that
// fill no tile, the int32 sums at their largest, and a batch taller than one chunk's grid.
// Skipped without a device (scripts/gpu-check.sh runs it on one).
#include <cstdint>
#include <cstring>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/device.h"
#include "kernels/int8_gemm.h"
#include "tests/kernels/kernel_test_util.h"

namespace coupler::kernels {
namespace {

std::vector<float> Product(const std::vector<uint8_t>& a, bool a_signed, size_t m,
                       const Int8Weights& w, Backend backend) {
  std::vector<float> out(m * w.rows());
  const Status status = Int8Gemm({a.data(), a_signed, m, w.cols()}, w, out, backend);
  EXPECT_TRUE(status.ok()) << status.ToString();
  return out;
}

Int8Weights RandomWeights(size_t n, size_t k, SplitMix64& rng) {
  std::vector<int8_t> q(n * k);
  for (int8_t& v : q) v = static_cast<int8_t>(static_cast<int>(rng.Next() % 255) - 127);
  std::vector<float> scale(n);
  for (float& s : scale) s = 1.0f / static_cast<float>(1 + rng.Next() % 5000);
  return Int8Weights(std::move(q), n, k, std::move(scale));
}

TEST(Int8GemmCudaTest, GivesTheCpusBits) {
  if (!HaveCudaDevice()) GTEST_SKIP() << "no CUDA device";
  SplitMix64 rng(3);
  for (const bool a_signed : {false, true}) {
    for (const auto& [m, k, n] : {std::tuple<size_t, size_t, size_t>{1, 1, 1}, {7, 3, 5},
                                  {1000, 200, 512}, {33, 513, 20}, {70'000, 17, 3}}) {
      std::vector<uint8_t> a(m * k);
      for (uint8_t& v : a) {
        v = static_cast<uint8_t>(rng.Next());
        if (a_signed && v == 0x80) v = 0x81;
      }
      const Int8Weights w = RandomWeights(n, k, rng);
      const std::vector<float> cpu = Product(a, a_signed, m, w, Backend::kCpu);
      const std::vector<float> cuda = Product(a, a_signed, m, w, Backend::kCuda);
      for (size_t i = 0; i < cpu.size(); ++i) {
        ASSERT_EQ(BitsOf(cuda[i]), BitsOf(cpu[i]))
            << (a_signed ? "s8 " : "u8 ") << m << "x" << k << "x" << n << " element " << i;
      }
    }
  }
}

TEST(Int8GemmCudaTest, LargestSumsAreExact) {
  if (!HaveCudaDevice()) GTEST_SKIP() << "no CUDA device";
  const size_t k = kInt8GemmMaxInner;
  const Int8Weights w(std::vector<int8_t>(k, 127), 1, k, {1.0f});
  const std::vector<uint8_t> a(k, 255);
  const std::vector<float> out = Product(a, false, 1, w, Backend::kCuda);
  EXPECT_EQ(out[0], static_cast<float>(255.0 * 127.0 * static_cast<double>(k)));
}

}  // namespace
}  // namespace coupler::kernels
