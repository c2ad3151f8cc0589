// The INT8 levels of runtime/ops/activation_quantize.h: the hidden layers'
// one-pass epilogue gives the levels of the two passes it replaces
// (kernels::AddBiasActivate, then QuantizeActivations) bit for bit, and both
// follow the element rule — round to nearest even, saturate, NaN to 0, ReLU
// before the scale — at every row width, a vector's tail included.
#include "runtime/ops/activation_quantize.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "kernels/train_kernels.h"

namespace coupler::ops {
namespace {

// The rule, one element at a time, with libm's rounding (the default mode: to
// nearest even).
int32_t ExpectedLevel(float c, float bias, bool relu, const ActivationQuant &quant) {
  float v = c + bias;
  if (relu && v < 0.0f) v = 0.0f;
  v = v * (1.0f / quant.Scale());
  if (std::isnan(v)) return 0;
  const float lo = quant.is_signed ? -127.0f : 0.0f;
  const float hi = quant.is_signed ? 127.0f : 255.0f;
  return static_cast<int32_t>(std::nearbyint(std::clamp(v, lo, hi)));
}

// Values that reach every branch: ties at .5, both saturations, NaN,
// infinities, signed zeros.
std::vector<float> Awkward(size_t n, uint32_t seed) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const float special[] = {0.5f, 1.5f, 2.5f, -0.5f, -0.0f, 0.0f, nan, inf, -inf, 1e30f, -1e30f};
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 6.0f);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    v[i] = (i % 7 == 3) ? special[(i / 7) % std::size(special)]
                        : (i % 5 == 1 ? std::round(normal(rng)) + 0.5f : normal(rng));
  }
  return v;
}

template <typename T>
std::vector<int32_t> Levels(const std::vector<T> &q) {
  return std::vector<int32_t>(q.begin(), q.end());
}

// Each case runs on the CPU's widest path and on the plain loop.
class ActivationQuantizeTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override { UsePlainLoopForTesting(GetParam()); }
  void TearDown() override { UsePlainLoopForTesting(false); }
};

INSTANTIATE_TEST_SUITE_P(Paths, ActivationQuantizeTest, ::testing::Values(false, true),
                         [](const auto& p) { return p.param ? "Plain" : "Widest"; });

TEST_P(ActivationQuantizeTest, OnePassEpilogueIsTheTwoPassesBitForBit) {
  for (const bool is_signed : {false, true}) {
    for (const size_t cols : {1, 10, 15, 16, 17, 64, 130}) {
      const size_t rows = 9;
      const std::vector<float> c = Awkward(rows * cols, static_cast<uint32_t>(cols));
      const std::vector<float> bias = Awkward(cols, 1000 + static_cast<uint32_t>(cols));
      for (const double clip : {is_signed ? 12.7 : 25.5, 1e-45}) {  // scale 0.1; 0 (inv inf)
        const ActivationQuant quant{clip, is_signed};
        std::vector<uint8_t> fused(c.size(), 0xAA);
        QuantizeBiasRelu(c, cols, bias, quant, fused.data());

        std::vector<float> y = c;
        ASSERT_TRUE(kernels::AddBiasActivate(
                        kernels::MutMatrix{y.data(), ElementType::kFloat32, rows, cols},
                        bias.data(), /*relu=*/true)
                        .ok());
        std::vector<uint8_t> two_pass(c.size(), 0x55);
        QuantizeActivations(y, quant, two_pass.data());
        ASSERT_EQ(fused, two_pass) << "cols " << cols << (is_signed ? " s8" : " u8");

        for (size_t i = 0; i < c.size(); ++i) {
          const int32_t got = is_signed ? static_cast<int8_t>(fused[i]) : fused[i];
          ASSERT_EQ(got, ExpectedLevel(c[i], bias[i % cols], true, quant))
              << "element " << i << " of rows of " << cols << ": " << c[i] << " + "
              << bias[i % cols] << " at clip " << clip;
        }
      }
    }
  }
}

TEST_P(ActivationQuantizeTest, PlainQuantizingFollowsTheRuleAtEveryLength) {
  for (const bool is_signed : {false, true}) {
    for (const size_t n : {1, 7, 16, 31, 33, 1003}) {
      const std::vector<float> x = Awkward(n, 77 + static_cast<uint32_t>(n));
      const ActivationQuant quant{is_signed ? 63.5 : 127.5, is_signed};  // scale 0.5
      std::vector<int8_t> s(n + 1, 99);
      std::vector<uint8_t> u(n + 1, 99);
      if (is_signed) {
        QuantizeActivations(x, quant, s.data());
        EXPECT_EQ(s[n], 99) << "wrote past the end";
        s.pop_back();
      } else {
        QuantizeActivations(x, quant, u.data());
        EXPECT_EQ(u[n], 99) << "wrote past the end";
        u.pop_back();
      }
      const std::vector<int32_t> got = is_signed ? Levels(s) : Levels(u);
      for (size_t i = 0; i < n; ++i) {
        ASSERT_EQ(got[i], ExpectedLevel(x[i], 0.0f, false, quant))
            << "element " << i << ": " << x[i];
      }
    }
  }
}

}  // namespace
}  // namespace coupler::ops
