// The expression interpreter's CUDA twin against the CPU loops on columns that mix every float
// class, across the chunk seam: bit-identical except log (the GPU's log may differ in the last
// place) and NaN payloads; Unavailable without a device.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/device.h"
#include "kernels/expression.h"
#include "tests/kernels/kernel_test_util.h"

namespace coupler::kernels {
namespace {

struct Columns {
  std::vector<float> x, y;
  std::vector<double> d;
  std::vector<int32_t> label, city;
  std::vector<std::string> cities{"Oslo", "Paris", "Rome"};

  explicit Columns(size_t n) : x(RandomColumn(n, 21)), y(RandomColumn(n, 22)), d(n), label(n), city(n) {
    SplitMix64 rng(23);
    for (size_t i = 0; i < n; ++i) {
      d[i] = static_cast<double>(x[i]) * 1.0000001 + static_cast<double>(i % 7);
      label[i] = static_cast<int32_t>(rng.Next() % 10);
      city[i] = static_cast<int32_t>(rng.Next() % 4) - 1;  // -1 is missing
    }
  }
  io::TableSchema Schema() const {
    io::TableSchema s;
    s.columns = {{"x", ElementType::kFloat32, false}, {"y", ElementType::kFloat32, false},
                 {"d", ElementType::kFloat64, false}, {"label", ElementType::kInt32, false},
                 {"city", ElementType::kInt32, true}};
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
    }
    return in;
  }
};

std::vector<uint8_t> Evaluate(const expr::Program& p, const Columns& c, size_t n, Backend backend,
                         Status* status) {
  std::vector<uint8_t> out(n * ResultBytes(p.result), 0xA5);
  *status = EvaluateExpression(p, c.Inputs(p), n, out.data(), backend);
  return out;
}

template <typename T>
void ExpectSame(const std::vector<uint8_t>& cpu, const std::vector<uint8_t>& gpu, size_t n,
                bool loose, const std::string& text) {
  const T* a = reinterpret_cast<const T*>(cpu.data());
  const T* b = reinterpret_cast<const T*>(gpu.data());
  for (size_t i = 0; i < n; ++i) {
    if (std::isnan(a[i]) && std::isnan(b[i])) continue;
    if (loose && a[i] != b[i]) {
      ASSERT_NEAR(a[i], b[i], std::fabs(a[i]) * (sizeof(T) == 4 ? 2.5e-7 : 5e-16))
          << text << " row " << i;
      continue;
    }
    ASSERT_EQ(a[i], b[i]) << text << " row " << i;
    ASSERT_EQ(std::signbit(a[i]), std::signbit(b[i])) << text << " row " << i;
  }
}

TEST(ExpressionCudaTest, MatchesTheCpuAcrossTheChunkSeam) {
  if (!HaveCudaDevice()) GTEST_SKIP() << "no CUDA device";
  const size_t n = (size_t{1} << 20) + 4099;  // past one device chunk
  const Columns c(n);
  const std::vector<std::string> texts = {
      "x * y + 1",
      "sqrt(abs(x)) - y / 3",
      "clip(x, -1.5, y)",
      "x * d - label",
      "-(x - y) * 0.1",
      "log(abs(x) + 1)",
      "log(d)",
      "x > 0 and (y < 5 or label == 2)",
      "not x > y or isnan(y)",
      "city == \"Paris\" or city != \"Atlantis\" and x <= 0",
      "label >= 3 and d < 4",
  };
  for (const std::string& text : texts) {
    expr::ExprResult<expr::Program> p = expr::Compile(text, c.Schema());
    ASSERT_TRUE(p.ok()) << text << ": " << p.error().Describe(text);
    Status s;
    const std::vector<uint8_t> cpu = Evaluate(*p, c, n, Backend::kCpu, &s);
    COUPLER_ASSERT_OK(s);
    const std::vector<uint8_t> gpu = Evaluate(*p, c, n, Backend::kCuda, &s);
    COUPLER_ASSERT_OK(s);
    const bool loose = text.find("log") != std::string::npos;
    switch (p->result) {
      case expr::ValueType::kBool: ASSERT_EQ(cpu, gpu) << text; break;
      case expr::ValueType::kFloat32: ExpectSame<float>(cpu, gpu, n, loose, text); break;
      case expr::ValueType::kFloat64: ExpectSame<double>(cpu, gpu, n, loose, text); break;
    }
  }
}

TEST(ExpressionCudaTest, UnavailableWithoutADevice) {
  if (HaveCudaDevice()) GTEST_SKIP() << "a CUDA device is present";
  const Columns c(10);
  expr::ExprResult<expr::Program> p = expr::Compile("x > 0", c.Schema());
  ASSERT_TRUE(p.ok());
  Status s;
  const std::vector<uint8_t> out = Evaluate(*p, c, 10, Backend::kCuda, &s);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  EXPECT_EQ(out, std::vector<uint8_t>(10, 0xA5));  // untouched
}

}  // namespace
}  // namespace coupler::kernels
