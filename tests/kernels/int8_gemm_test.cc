// int8_gemm's CPU twin: oneDNN's int8 matmul (AMX or VNNI here, weights packed once per batch
// shape) gives the loop's bits exactly — u8 and s8 activations, shapes that fill no tile, sums
// at the int32 range's edge — packed forms are kept per shape and shared by copies, and bad input
// is refused on either backend before anything is written.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/cpu/int8_gemm_cpu.h"
#include "kernels/cpu/onednn_gemm.h"
#include "kernels/device.h"
#include "kernels/int8_gemm.h"
#include "tests/kernels/kernel_test_util.h"

namespace coupler::kernels {
namespace {

struct Case {
  std::vector<uint8_t> a;  // m x k bytes, read as u8 or s8
  Int8Weights w;
  size_t m = 0;
};

Case Random(size_t m, size_t k, size_t n, bool a_signed, uint64_t seed) {
  SplitMix64 rng(seed);
  Case c;
  c.m = m;
  c.a.resize(m * k);
  for (uint8_t& v : c.a) {
    v = static_cast<uint8_t>(rng.Next());
    if (a_signed && v == 0x80) v = 0x81;  // s8 activations are in [-127, 127]
  }
  std::vector<int8_t> q(n * k);
  for (int8_t& v : q) v = static_cast<int8_t>(static_cast<int>(rng.Next() % 255) - 127);
  std::vector<float> scale(n);
  for (float& s : scale) s = std::ldexp(1.0f + (rng.Next() % 1000) / 1000.0f, -12 + int(rng.Next() % 8));
  c.w = Int8Weights(std::move(q), n, k, std::move(scale));
  return c;
}

std::vector<float> Loop(const Case& c, bool a_signed) {
  std::vector<float> out(c.m * c.w.rows());
  Int8GemmLoop({c.a.data(), a_signed, c.m, c.w.cols()}, c.w.q().data(), c.w.rows(),
               c.w.scale().data(), out.data());
  return out;
}

std::vector<float> Product(const Case& c, bool a_signed, Backend backend) {
  std::vector<float> out(c.m * c.w.rows(), std::numeric_limits<float>::quiet_NaN());
  const Status status = Int8Gemm({c.a.data(), a_signed, c.m, c.w.cols()}, c.w, out, backend);
  EXPECT_TRUE(status.ok()) << status.ToString();
  return out;
}

void ExpectSameBits(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    uint32_t g, w;
    std::memcpy(&g, &got[i], 4);
    std::memcpy(&w, &want[i], 4);
    ASSERT_EQ(g, w) << "element " << i << ": " << got[i] << " vs " << want[i];
  }
}

TEST(Int8GemmTest, CpuGivesTheLoopsBitsForEveryShape) {
  uint64_t seed = 1;
  for (const bool a_signed : {false, true}) {
    for (const size_t m : {size_t{1}, size_t{7}, size_t{64}, size_t{1000}}) {
      for (const auto& [k, n] : {std::pair<size_t, size_t>{1, 1}, {3, 5}, {64, 128},
                                 {200, 512}, {513, 20}}) {
        const Case c = Random(m, k, n, a_signed, seed++);
        SCOPED_TRACE(testing::Message() << (a_signed ? "s8" : "u8") << " " << m << "x" << k
                                        << " * " << k << "x" << n);
        ExpectSameBits(Product(c, a_signed, Backend::kCpu), Loop(c, a_signed));
      }
    }
  }
}

TEST(Int8GemmTest, OneDnnRunsItWhereTheCpuHasInt8Instructions) {
  if (!OneDnnBuilt()) GTEST_SKIP() << "built without oneDNN";
  const Case c = Random(32, 64, 16, false, 9);
  std::vector<float> out(32 * 16);
  EXPECT_TRUE(OneDnnInt8Gemm({c.a.data(), false, 32, 64}, c.w, out.data()))
      << "oneDNN isa " << OneDnnIsa();
  ExpectSameBits(out, Loop(c, false));
}

TEST(Int8GemmTest, SumsAtTheEdgeOfInt32AreExact) {
  // Every product at its largest: 255 x 127 (u8) and -127 x -127 (s8), over the longest k
  // allowed, where a sum kept in 16 bits or in float would be off.
  const size_t k = kInt8GemmMaxInner, n = 3, m = 2;
  std::vector<int8_t> q(n * k, 127);
  for (size_t p = 0; p < k; ++p) q[k + p] = -127;                    // row 1: negative
  for (size_t p = 0; p < k; ++p) q[2 * k + p] = p % 2 ? 127 : -127;  // row 2: cancels
  const Int8Weights w(std::move(q), n, k, {1.0f, 1.0f, 0.5f});
  std::vector<uint8_t> u(m * k, 255);
  std::vector<float> out(m * n);
  COUPLER_ASSERT_OK(Int8Gemm({u.data(), false, m, k}, w, out, Backend::kCpu));
  const double top = 255.0 * 127.0 * static_cast<double>(k);
  EXPECT_EQ(out[0], static_cast<float>(top));
  EXPECT_EQ(out[1], -static_cast<float>(top));
  EXPECT_EQ(out[2], 0.0f);
  std::vector<uint8_t> s(m * k, static_cast<uint8_t>(-127));
  COUPLER_ASSERT_OK(Int8Gemm({s.data(), true, m, k}, w, out, Backend::kCpu));
  EXPECT_EQ(out[0], -static_cast<float>(127.0 * 127.0 * static_cast<double>(k)));
  EXPECT_EQ(out[1], static_cast<float>(127.0 * 127.0 * static_cast<double>(k)));
}

TEST(Int8GemmTest, PackedWeightsServeEveryBatchShapeAndEveryCopyAndThread) {
  Case c = Random(300, 96, 40, false, 77);
  const Int8Weights copy = c.w;
  const std::vector<float> want = Loop(c, false);
  // Batch shapes in turn on the same weights (and on a copy sharing the packed forms), then
  // four threads at once.
  for (const size_t rows : {size_t{300}, size_t{1}, size_t{17}, size_t{300}}) {
    std::vector<float> out(rows * 40);
    COUPLER_ASSERT_OK(Int8Gemm({c.a.data(), false, rows, 96}, copy, out, Backend::kCpu));
    ExpectSameBits(out, std::vector<float>(want.begin(), want.begin() + rows * 40));
  }
  std::vector<std::vector<float>> outs(4, std::vector<float>(300 * 40));
  std::vector<std::thread> threads;
  for (size_t t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        (void)Int8Gemm({c.a.data(), false, 300, 96}, c.w, outs[t], Backend::kCpu);
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& out : outs) ExpectSameBits(out, want);
}

TEST(Int8GemmTest, RefusesBadInputOnEitherBackendBeforeWriting) {
  const Case c = Random(4, 8, 3, false, 5);
  for (const Backend backend : {Backend::kCpu, Backend::kCuda}) {
    std::vector<float> out(12, 42.0f);
    // k of the activations is not the weights'.
    Status status = Int8Gemm({c.a.data(), false, 4, 7}, c.w, out, backend);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.ToString();
    // An output of the wrong size.
    std::vector<float> small(11, 42.0f);
    status = Int8Gemm({c.a.data(), false, 4, 8}, c.w, small, backend);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.ToString();
    // No activations.
    status = Int8Gemm({nullptr, false, 4, 8}, c.w, out, backend);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.ToString();
    for (const float v : out) EXPECT_EQ(v, 42.0f);
    for (const float v : small) EXPECT_EQ(v, 42.0f);
  }
  // An inner dimension whose sums could overflow int32.
  const Int8Weights wide(std::vector<int8_t>(kInt8GemmMaxInner + 1), 1, kInt8GemmMaxInner + 1,
                         {1.0f});
  std::vector<uint8_t> a(kInt8GemmMaxInner + 1);
  std::vector<float> out(1);
  EXPECT_EQ(Int8Gemm({a.data(), false, 1, kInt8GemmMaxInner + 1}, wide, out, Backend::kCpu).code(),
            StatusCode::kInvalidArgument);
}

// What lets RunKernel fall back to the CPU: without CUDA in the build, or without a device.
TEST(Int8GemmTest, DeviceBackendIsUnavailableWithoutADevice) {
  if (HaveCudaDevice()) GTEST_SKIP() << "a device is here: int8_gemm_cuda_test covers it";
  const Case c = Random(4, 8, 3, false, 5);
  std::vector<float> out(12, 42.0f);
  EXPECT_EQ(Int8Gemm({c.a.data(), false, 4, 8}, c.w, out, Backend::kCuda).code(),
            StatusCode::kUnavailable);
  for (const float v : out) EXPECT_EQ(v, 42.0f);
}

}  // namespace
}  // namespace coupler::kernels
