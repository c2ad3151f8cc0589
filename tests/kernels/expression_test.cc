// The CPU evaluator of compiled expressions against values worked out by hand: float32 vs
// float64 arithmetic, int32 promotion, NaN in comparisons and under `not` (as numpy), log and
// sqrt of negatives, clip, categorical equality through a dictionary, and block seams.
#include "kernels/expression.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/kernels/kernel_test_util.h"

namespace coupler::kernels {
namespace {

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

struct Frame {
  std::vector<float> x{1.5f, -2.0f, kNan, 0.0f, 4.0f};
  std::vector<float> y{2.0f, 3.0f, 1.0f, -1.0f, 0.25f};
  std::vector<double> d{0.1, 0.2, 0.3, 0.4, 0.5};
  std::vector<int32_t> label{0, 1, 2, 3, 2};
  std::vector<int32_t> city{0, 1, -1, 2, 1};  // Oslo, Paris, missing, Rome, Paris
  std::vector<std::string> cities{"Oslo", "Paris", "Rome"};
  // int64 ids with a missing one (the int64 minimum), and a bool column.
  std::vector<int64_t> id{16777217, std::numeric_limits<int64_t>::min(), 3, int64_t{1} << 53, -1};
  std::vector<uint8_t> on{1, 1, 0, 1, 0};

  io::TableSchema Schema() const {
    io::TableSchema s;
    s.columns = {{"x", ElementType::kFloat32, false},
                 {"y", ElementType::kFloat32, false},
                 {"d", ElementType::kFloat64, false},
                 {"label", ElementType::kInt32, false},
                 {"city", ElementType::kInt32, true},
                 {"id", ElementType::kInt64, false},
                 {"on", ElementType::kBool, false}};
    return s;
  }
  std::vector<ExpressionInput> Inputs(const expr::Program& p) const {
    std::vector<ExpressionInput> in;
    for (const expr::ProgramColumn& c : p.columns) {
      if (c.name == "x") in.push_back({x.data(), ElementType::kFloat32, nullptr});
      if (c.name == "y") in.push_back({y.data(), ElementType::kFloat32, nullptr});
      if (c.name == "d") in.push_back({d.data(), ElementType::kFloat64, nullptr});
      if (c.name == "label") in.push_back({label.data(), ElementType::kInt32, nullptr});
      if (c.name == "city") in.push_back({city.data(), ElementType::kInt32, &cities});
      if (c.name == "id") in.push_back({id.data(), ElementType::kInt64, nullptr});
      if (c.name == "on") in.push_back({on.data(), ElementType::kBool, nullptr});
    }
    return in;
  }
};

expr::Program Compiled(const std::string& text, const Frame& f) {
  expr::ExprResult<expr::Program> p = expr::Compile(text, f.Schema());
  EXPECT_TRUE(p.ok()) << text << ": " << (p.ok() ? "" : p.error().Describe(text));
  return p.ok() ? std::move(p.value()) : expr::Program{};
}

std::vector<uint8_t> Condition(const std::string& text, const Frame& f = Frame()) {
  const expr::Program p = Compiled(text, f);
  EXPECT_EQ(p.result, expr::ValueType::kBool) << text;
  std::vector<uint8_t> out(f.x.size(), 0xAA);
  const Status s = EvaluateExpression(p, f.Inputs(p), f.x.size(), out.data(), Backend::kCpu);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return out;
}

std::vector<float> Float32(const std::string& text, const Frame& f = Frame()) {
  const expr::Program p = Compiled(text, f);
  EXPECT_EQ(p.result, expr::ValueType::kFloat32) << text;
  std::vector<float> out(f.x.size(), -777.0f);
  const Status s = EvaluateExpression(p, f.Inputs(p), f.x.size(), out.data(), Backend::kCpu);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return out;
}

std::vector<double> Float64(const std::string& text, const Frame& f = Frame()) {
  const expr::Program p = Compiled(text, f);
  EXPECT_EQ(p.result, expr::ValueType::kFloat64) << text;
  std::vector<double> out(f.x.size(), -777.0);
  const Status s = EvaluateExpression(p, f.Inputs(p), f.x.size(), out.data(), Backend::kCpu);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return out;
}

using Bools = std::vector<uint8_t>;

TEST(ExpressionTest, ComparisonsWithNanAreFalseAndNotOfThemTrue) {
  EXPECT_EQ(Condition("x > 0"), (Bools{1, 0, 0, 0, 1}));
  EXPECT_EQ(Condition("x <= 0"), (Bools{0, 1, 0, 1, 0}));
  EXPECT_EQ(Condition("not x > 0"), (Bools{0, 1, 1, 1, 0}));  // numpy: ~(nan > 0) is True
  EXPECT_EQ(Condition("x != x"), (Bools{0, 0, 1, 0, 0}));
  EXPECT_EQ(Condition("x == x"), (Bools{1, 1, 0, 1, 1}));
  EXPECT_EQ(Condition("isnan(x)"), (Bools{0, 0, 1, 0, 0}));
  EXPECT_EQ(Condition("x > 0 and y > 1 or label == 3"), (Bools{1, 0, 0, 1, 0}));
  EXPECT_EQ(Condition("x > 0 and (y > 1 or label == 3)"), (Bools{1, 0, 0, 0, 0}));
}

TEST(ExpressionTest, Float32ArithmeticRoundsAsFloat32) {
  const std::vector<float> v = Float32("x * y + 1");
  EXPECT_EQ(v[0], 1.5f * 2.0f + 1.0f);
  EXPECT_EQ(v[1], -5.0f);
  EXPECT_TRUE(std::isnan(v[2]));
  EXPECT_EQ(v[3], 1.0f);  // -0 + 1
  EXPECT_EQ(Float32("x / y")[3], -0.0f);
  EXPECT_EQ(Float32("y / 0")[0], kInf);
  // 0.1 is float32(0.1) here, as numpy's weak scalar: y * 0.1 in float32.
  EXPECT_EQ(Float32("y * 0.1")[1], 3.0f * 0.1f);
  EXPECT_EQ(Float32("-x")[1], 2.0f);
}

TEST(ExpressionTest, Float64AndInt32PromoteToFloat64) {
  const std::vector<double> v = Float64("x * d");
  EXPECT_EQ(v[0], 1.5 * 0.1);  // x widened first, then a float64 product
  EXPECT_EQ(v[1], -2.0 * 0.2);
  const std::vector<double> l = Float64("label / 2 + x");
  EXPECT_EQ(l[0], 1.5);
  EXPECT_EQ(l[3], 1.5);
  EXPECT_EQ(l[4], 5.0);
  EXPECT_EQ(Float64("label * 0.1")[1], 0.1);  // 0.1 as a double, as numpy int32 * 0.1
}

// int64 reads exactly into float64 (up to 2^53), its missing value as NaN; a bool column is a
// condition on its own.
TEST(ExpressionTest, Int64AndBoolColumnsLoadExactlyAndMissingIsNan) {
  const std::vector<double> v = Float64("id + 0");
  EXPECT_EQ(v[0], 16777217.0);
  EXPECT_TRUE(std::isnan(v[1]));
  EXPECT_EQ(v[3], 9007199254740992.0);
  EXPECT_EQ(Condition("id > 16777216"), (std::vector<uint8_t>{1, 0, 0, 1, 0}));
  EXPECT_EQ(Condition("isnan(id)"), (std::vector<uint8_t>{0, 1, 0, 0, 0}));
  EXPECT_EQ(Condition("on"), (std::vector<uint8_t>{1, 1, 0, 1, 0}));
  EXPECT_EQ(Condition("on and id > 0"), (std::vector<uint8_t>{1, 0, 0, 1, 0}));
  EXPECT_EQ(Condition("not on or x > 1"), (std::vector<uint8_t>{1, 0, 1, 0, 1}));
}

TEST(ExpressionTest, FunctionsOfNegativesAreNanAsNumpy) {
  const std::vector<float> s = Float32("sqrt(x)");
  EXPECT_EQ(s[0], std::sqrt(1.5f));
  EXPECT_TRUE(std::isnan(s[1]));
  EXPECT_EQ(s[3], 0.0f);
  EXPECT_EQ(s[4], 2.0f);
  const std::vector<float> g = Float32("log(x)");
  EXPECT_EQ(g[0], std::log(1.5f));
  EXPECT_TRUE(std::isnan(g[1]));
  EXPECT_EQ(g[3], -kInf);
  EXPECT_EQ(Float32("abs(x)")[1], 2.0f);
  const std::vector<float> c = Float32("clip(x, -1, 2)");
  EXPECT_EQ(c[0], 1.5f);
  EXPECT_EQ(c[1], -1.0f);
  EXPECT_TRUE(std::isnan(c[2]));  // NaN stays NaN
  EXPECT_EQ(c[3], 0.0f);
  EXPECT_EQ(c[4], 2.0f);
  // Lower bound above the upper: numpy's minimum(maximum(x, lo), hi) gives hi.
  EXPECT_EQ(Float32("clip(x, 3, 1)")[0], 1.0f);
}

TEST(ExpressionTest, CategoricalsCompareThroughTheDictionary) {
  EXPECT_EQ(Condition("city == \"Paris\""), (Bools{0, 1, 0, 0, 1}));
  EXPECT_EQ(Condition("\"Paris\" != city"), (Bools{1, 0, 1, 1, 0}));  // missing != Paris
  EXPECT_EQ(Condition("city == \"Atlantis\""), (Bools{0, 0, 0, 0, 0}));
  EXPECT_EQ(Condition("city != \"Atlantis\""), (Bools{1, 1, 1, 1, 1}));
  EXPECT_EQ(Condition("city == \"Rome\" or x > 3"), (Bools{0, 0, 0, 1, 1}));
}

TEST(ExpressionTest, BlockSeamsAndLongColumnsMatchTheScalarLoop) {
  Frame f;
  const size_t n = 3 * 4096 + 17;
  f.x = RandomColumn(n, 11);
  f.y = RandomColumn(n, 12);
  f.d.assign(n, 0.5);
  f.label.assign(n, 3);
  f.city.assign(n, 0);
  const std::vector<float> v = Float32("sqrt(abs(x * y - 1)) / (1 + abs(y))", f);
  for (size_t i = 0; i < n; ++i) {
    const float want = std::sqrt(std::fabs(f.x[i] * f.y[i] - 1.0f)) / (1.0f + std::fabs(f.y[i]));
    ASSERT_EQ(BitsOf(v[i]), BitsOf(want)) << "row " << i;
  }
  const std::vector<uint8_t> keep = Condition("x * y > 0.5 and not isnan(y)", f);
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(keep[i], uint8_t(f.x[i] * f.y[i] > 0.5f && !std::isnan(f.y[i]))) << "row " << i;
  }
}

TEST(ExpressionTest, InputsOfTheWrongTypeAreRefused) {
  Frame f;
  const expr::Program p = Compiled("x > 0", f);
  std::vector<ExpressionInput> in{{f.d.data(), ElementType::kFloat64, nullptr}};
  std::vector<uint8_t> out(5);
  const Status s = EvaluateExpression(p, in, 5, out.data(), Backend::kCpu);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("compiled for float32"), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace coupler::kernels
