// Optimizer steps against hand-computed values for three steps (element 0) and a double
// reference of the documented formulas (every element, so the vector loop and its tail are
// both covered); weight decay must be decoupled from the gradient.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/train_kernels.h"

namespace coupler::kernels {
namespace {

constexpr size_t kN = 35;  // two 16-wide blocks and a tail
constexpr double kGrads[] = {0.5, 0.5, -1.0};

// Gradient of element i at a step: element 0 sees kGrads exactly.
float Grad(size_t i, int step) {
  return static_cast<float>(kGrads[step] * (1.0 + 0.1 * static_cast<double>(i)));
}

TEST(KernelsOptimizerTest, SgdMomentumMatchesHandComputedSteps) {
  constexpr float kLr = 0.1f;
  constexpr float kMomentum = 0.9f;
  constexpr float kDecay = 0.01f;
  std::vector<float> w(kN);
  std::vector<float> v(kN, 0.0f);
  std::vector<double> ref_w(kN);
  std::vector<double> ref_v(kN, 0.0);
  for (size_t i = 0; i < kN; ++i) w[i] = static_cast<float>(ref_w[i] = 1.0 - 0.02 * i);
  // w and v of element 0 after each step: v = 0.9 v + g; w -= 0.1 (v + 0.01 w).
  const double hand_w[] = {0.949, 0.853051, 0.866697949};
  const double hand_v[] = {0.5, 0.95, -0.145};
  for (int step = 0; step < 3; ++step) {
    std::vector<float> g(kN);
    for (size_t i = 0; i < kN; ++i) g[i] = Grad(i, step);
    EXPECT_TRUE(SgdMomentumStep(w.data(), g.data(), v.data(), kN, kLr, kMomentum, kDecay).ok());
    EXPECT_NEAR(w[0], hand_w[step], 1e-6) << "step " << step;
    EXPECT_NEAR(v[0], hand_v[step], 1e-6) << "step " << step;
    for (size_t i = 0; i < kN; ++i) {
      ref_v[i] = kMomentum * ref_v[i] + g[i];
      ref_w[i] -= kLr * (ref_v[i] + kDecay * ref_w[i]);
      EXPECT_NEAR(w[i], ref_w[i], 1e-6) << "step " << step << " element " << i;
      EXPECT_NEAR(v[i], ref_v[i], 1e-6) << "step " << step << " element " << i;
    }
  }
}

TEST(KernelsOptimizerTest, AdamWMatchesHandComputedSteps) {
  AdamWParams params;
  params.lr = 0.1f;
  params.weight_decay = 0.01f;  // beta1 0.9, beta2 0.999, eps 1e-8
  std::vector<float> w(kN);
  std::vector<float> m(kN, 0.0f);
  std::vector<float> v(kN, 0.0f);
  std::vector<double> ref_w(kN);
  std::vector<double> ref_m(kN, 0.0);
  std::vector<double> ref_v(kN, 0.0);
  for (size_t i = 0; i < kN; ++i) w[i] = static_cast<float>(ref_w[i] = 1.0 + 0.05 * i);
  // Element 0 by hand. Step 1: m = 0.05, v = 0.00025, both bias-corrected to 0.5 and 0.25,
  // so the update is lr * (0.5 / (0.5 + 1e-8) + 0.01 * 1).
  const double hand_w[] = {0.899000002, 0.798101004, 0.804867836};
  const double hand_m[] = {0.05, 0.095, -0.0145};
  const double hand_v[] = {0.00025, 0.00049975, 0.00149925025};
  for (int step = 0; step < 3; ++step) {
    std::vector<float> g(kN);
    for (size_t i = 0; i < kN; ++i) g[i] = Grad(i, step);
    EXPECT_TRUE(AdamWStep(w.data(), g.data(), m.data(), v.data(), kN, params, step + 1).ok());
    EXPECT_NEAR(w[0], hand_w[step], 1e-6) << "step " << step;
    // The hand values use the decimal betas; 0.999f is 0.99900001, so 1 - beta2 (and v) sit
    // 1.3e-5 below them in relative terms, 1 - beta1 (and m) 2.4e-7 above.
    EXPECT_NEAR(m[0], hand_m[step], 1e-6 * std::fabs(hand_m[step])) << "step " << step;
    EXPECT_NEAR(v[0], hand_v[step], 3e-5 * hand_v[step]) << "step " << step;
    const double t = step + 1;
    for (size_t i = 0; i < kN; ++i) {
      ref_m[i] = 0.9 * ref_m[i] + 0.1 * g[i];
      ref_v[i] = 0.999 * ref_v[i] + 0.001 * g[i] * g[i];
      const double m_hat = ref_m[i] / (1.0 - std::pow(0.9, t));
      const double v_hat = ref_v[i] / (1.0 - std::pow(0.999, t));
      ref_w[i] -= 0.1 * (m_hat / (std::sqrt(v_hat) + 1e-8) + 0.01 * ref_w[i]);
      EXPECT_NEAR(w[i], ref_w[i], 2e-6) << "step " << step << " element " << i;
    }
  }
}

// With a zero gradient, decoupled decay shrinks w by exactly lr * wd * w; L2 regularization
// folded into the gradient would instead be normalized by Adam into a step of about lr.
TEST(KernelsOptimizerTest, AdamWWeightDecayIsDecoupledFromTheGradient) {
  AdamWParams params;
  params.lr = 0.01f;
  params.weight_decay = 0.1f;
  std::vector<float> w(kN, 2.0f);
  const std::vector<float> g(kN, 0.0f);
  std::vector<float> m(kN, 0.0f);
  std::vector<float> v(kN, 0.0f);
  EXPECT_TRUE(AdamWStep(w.data(), g.data(), m.data(), v.data(), kN, params, 1).ok());
  for (size_t i = 0; i < kN; ++i) EXPECT_NEAR(w[i], 2.0 - 0.01 * 0.1 * 2.0, 1e-7) << i;
}

TEST(KernelsOptimizerDeathTest, AdamWRejectsStepZero) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  std::vector<float> w(1, 1.0f), g(1, 1.0f), m(1, 0.0f), v(1, 0.0f);
  EXPECT_DEATH(AdamWStep(w.data(), g.data(), m.data(), v.data(), 1, AdamWParams{}, 0),
               "step counts from 1");
}

}  // namespace
}  // namespace coupler::kernels
