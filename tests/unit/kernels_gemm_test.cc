// Gemm against a double-precision triple loop: every transpose combination, shapes from 1x1x1 to
// ones that split into several M, N and K tiles (with partial edge tiles), every storage mix.
// 16-bit operands are compared against a reference computed on the values they actually hold.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "kernels/train_kernels.h"
#include "runtime/precision/half.h"
#include "tests/kernels/kernel_test_util.h"

namespace coupler::kernels {
namespace {

constexpr ElementType kF32 = ElementType::kFloat32;
constexpr ElementType kF16 = ElementType::kFloat16;
constexpr ElementType kBf16 = ElementType::kBFloat16;

const char* Name(ElementType s) { return s == kF32 ? "f32" : (s == kF16 ? "f16" : "bf16"); }

// A matrix in one storage format plus the exact value of each stored element.
struct TestMatrix {
  ElementType storage = kF32;
  size_t rows = 0;
  size_t cols = 0;
  std::vector<float> f32;
  std::vector<uint16_t> bits16;

  TestMatrix(ElementType s, size_t r, size_t c) : storage(s), rows(r), cols(c) {
    if (s == kF32) {
      f32.resize(r * c);
    } else {
      bits16.resize(r * c);
    }
  }
  void Set(size_t i, float v) {
    if (storage == kF32) {
      f32[i] = v;
    } else if (storage == kF16) {
      bits16[i] = precision::FloatToHalfBits(v);
    } else {
      bits16[i] = precision::FloatToBf16Bits(v);
    }
  }
  double Get(size_t i) const {
    if (storage == kF32) return f32[i];
    return storage == kF16 ? precision::HalfBitsToFloat(bits16[i])
                           : precision::Bf16BitsToFloat(bits16[i]);
  }
  const void* data() const {
    return storage == kF32 ? static_cast<const void*>(f32.data()) : bits16.data();
  }
  void* data() { return storage == kF32 ? static_cast<void*>(f32.data()) : bits16.data(); }
  ConstMatrix View() const { return {data(), storage, rows, cols}; }
  MutMatrix MutView() { return {data(), storage, rows, cols}; }
};

TestMatrix Random(ElementType s, size_t rows, size_t cols, uint64_t seed) {
  TestMatrix m(s, rows, cols);
  SplitMix64 rng(seed);
  for (size_t i = 0; i < rows * cols; ++i) m.Set(i, rng.Uniform(-1.0f, 1.0f));
  return m;
}

// Relative rounding error bound of one rounding to the storage (half an ulp).
double UnitRoundoff(ElementType s) { return s == kF32 ? 0.0 : (s == kF16 ? 0x1p-11 : 0x1p-8); }

struct Case {
  bool trans_a = false;
  bool trans_b = false;
  size_t m = 0;
  size_t k = 0;
  size_t n = 0;
  ElementType a = kF32;
  ElementType b = kF32;
  ElementType c = kF32;
  float alpha = 1.0f;
  float beta = 0.0f;

  std::string Describe() const {
    return std::string(trans_a ? "T" : "N") + (trans_b ? "T" : "N") + " m=" + std::to_string(m) +
           " k=" + std::to_string(k) + " n=" + std::to_string(n) + " a=" + Name(a) +
           " b=" + Name(b) + " c=" + Name(c) + " alpha=" + std::to_string(alpha) +
           " beta=" + std::to_string(beta);
  }
};

// Runs Gemm for one case and compares every element with the double reference. fp32 results
// get a relative 1e-5 of the sum of magnitudes (fp32 accumulation over K); a 16-bit c also its
// one final rounding.
void CheckCase(const Case& t, uint64_t seed) {
  SCOPED_TRACE(t.Describe());
  const TestMatrix a = Random(t.a, t.trans_a ? t.k : t.m, t.trans_a ? t.m : t.k, seed);
  const TestMatrix b = Random(t.b, t.trans_b ? t.n : t.k, t.trans_b ? t.k : t.n, seed + 1);
  TestMatrix c = Random(t.c, t.m, t.n, seed + 2);
  const TestMatrix c_old = c;

  // op(a) as m x k and op(b) transposed as n x k, so the reference's inner loop is contiguous.
  std::vector<double> op_a(t.m * t.k);
  std::vector<double> op_bt(t.n * t.k);
  for (size_t i = 0; i < t.m; ++i) {
    for (size_t p = 0; p < t.k; ++p) {
      op_a[i * t.k + p] = t.trans_a ? a.Get(p * t.m + i) : a.Get(i * t.k + p);
    }
  }
  for (size_t j = 0; j < t.n; ++j) {
    for (size_t p = 0; p < t.k; ++p) {
      op_bt[j * t.k + p] = t.trans_b ? b.Get(j * t.k + p) : b.Get(p * t.n + j);
    }
  }

  EXPECT_TRUE(Gemm(t.trans_a, t.trans_b, t.alpha, a.View(), b.View(), t.beta, c.MutView()).ok());

  int failures = 0;
  for (size_t i = 0; i < t.m && failures < 5; ++i) {
    for (size_t j = 0; j < t.n && failures < 5; ++j) {
      double sum = 0.0;
      double magnitude = 0.0;
      for (size_t p = 0; p < t.k; ++p) {
        const double prod = op_a[i * t.k + p] * op_bt[j * t.k + p];
        sum += prod;
        magnitude += std::fabs(prod);
      }
      double expected = t.alpha * sum;
      magnitude *= std::fabs(t.alpha);
      if (t.beta != 0.0f) {
        expected += t.beta * c_old.Get(i * t.n + j);
        magnitude += std::fabs(t.beta * c_old.Get(i * t.n + j));
      }
      const double tolerance = UnitRoundoff(t.c) * std::fabs(expected) + 1e-5 * magnitude + 1e-7;
      const double got = c.Get(i * t.n + j);
      if (!(std::fabs(got - expected) <= tolerance)) {
        ADD_FAILURE() << "c[" << i << "][" << j << "] = " << got << ", expected " << expected
                      << " (tolerance " << tolerance << ")";
        ++failures;
      }
    }
  }
}

struct StorageMix {
  ElementType a;
  ElementType b;
  ElementType c;
};

// fp32 throughout (straight to sgemm), all-16-bit, and mixes where only some operands are
// widened, including fp32 operands read in place and a 16-bit output with fp32 inputs.
constexpr StorageMix kMixes[] = {
    {kF32, kF32, kF32},  {kF16, kF16, kF16}, {kBf16, kBf16, kBf16}, {kF16, kF32, kF32},
    {kF32, kBf16, kF32}, {kF32, kF32, kF16}, {kBf16, kBf16, kF32},  {kF16, kBf16, kBf16},
};

TEST(KernelsGemmTest, SmallShapesMatchReferenceForEveryTransposeAndStorage) {
  struct Shape {
    size_t m, k, n;
  };
  constexpr Shape kShapes[] = {{1, 1, 1}, {7, 13, 5}, {3, 1, 9}, {33, 17, 65}, {1, 40, 1}};
  uint64_t seed = 1;
  for (const Shape& shape : kShapes) {
    for (const StorageMix& mix : kMixes) {
      for (int trans = 0; trans < 4; ++trans) {
        for (float beta : {0.0f, 0.5f}) {
          CheckCase({(trans & 1) != 0, (trans & 2) != 0, shape.m, shape.k, shape.n, mix.a, mix.b,
                     mix.c, 1.5f, beta},
                    seed += 3);
        }
      }
    }
  }
}

// With the 1 MiB workspace, m=520 k=600 n=200 splits into M tiles of 218, 218, 84 and N tiles
// of 160, 40 (the kernel gives op(a) at most half the workspace); the skinny shapes split
// only one of M or N. Every operand is read across tile edges.
TEST(KernelsGemmTest, ShapesSpanningSeveralTilesMatchReference) {
  struct Shape {
    size_t m, k, n;
  };
  constexpr Shape kShapes[] = {{520, 600, 200}, {2000, 300, 3}, {2, 100, 3000}};
  constexpr StorageMix kTiledMixes[] = {
      {kF32, kF32, kF32}, {kF16, kF16, kF16}, {kBf16, kF32, kBf16}, {kF32, kF16, kF32}};
  uint64_t seed = 1000;
  for (const Shape& shape : kShapes) {
    for (const StorageMix& mix : kTiledMixes) {
      for (int trans = 0; trans < 4; ++trans) {
        CheckCase({(trans & 1) != 0, (trans & 2) != 0, shape.m, shape.k, shape.n, mix.a, mix.b,
                   mix.c, 1.0f, 0.75f},
                  seed += 3);
      }
    }
  }
}

// k=5000 does not fit one tile beside 64-wide output tiles: the reduction is split into K
// tiles (2016, 2016, 968) accumulated in fp32, and beta must be applied exactly once.
TEST(KernelsGemmTest, LargeKSplitsTheReductionAndAppliesBetaOnce) {
  constexpr StorageMix kLargeKMixes[] = {{kF16, kF16, kF16}, {kBf16, kF32, kF32}};
  uint64_t seed = 2000;
  for (const StorageMix& mix : kLargeKMixes) {
    for (int trans = 0; trans < 4; ++trans) {
      CheckCase(
          {(trans & 1) != 0, (trans & 2) != 0, 70, 5000, 90, mix.a, mix.b, mix.c, 0.25f, -0.5f},
          seed += 3);
    }
  }
}

// BLAS semantics: beta == 0 means the old c is not read, so an uninitialized (NaN) output
// buffer cannot poison the result.
TEST(KernelsGemmTest, ZeroBetaIgnoresNanInOutput) {
  for (ElementType cs : {kF32, kF16, kBf16}) {
    for (ElementType as : {kF32, kBf16}) {
      SCOPED_TRACE(std::string("a=") + Name(as) + " c=" + Name(cs));
      TestMatrix a = Random(as, 4, 3, 7);
      TestMatrix b = Random(as, 3, 5, 8);
      TestMatrix c(cs, 4, 5);
      for (size_t i = 0; i < 20; ++i) c.Set(i, std::numeric_limits<float>::quiet_NaN());
      EXPECT_TRUE(Gemm(false, false, 1.0f, a.View(), b.View(), 0.0f, c.MutView()).ok());
      for (size_t i = 0; i < 20; ++i) EXPECT_TRUE(std::isfinite(c.Get(i))) << i;
    }
  }
}

TEST(KernelsGemmTest, EmptyReductionScalesOutputByBeta) {
  for (ElementType cs : {kF32, kF16, kBf16}) {
    SCOPED_TRACE(Name(cs));
    TestMatrix a(kF32, 3, 0);
    TestMatrix b(kF32, 0, 2);
    TestMatrix c(cs, 3, 2);
    for (size_t i = 0; i < 6; ++i) c.Set(i, static_cast<float>(i) + 1.0f);
    EXPECT_TRUE(Gemm(false, false, 1.0f, a.View(), b.View(), 0.5f, c.MutView()).ok());
    for (size_t i = 0; i < 6; ++i) EXPECT_EQ(c.Get(i), (static_cast<double>(i) + 1.0) * 0.5);
    EXPECT_TRUE(Gemm(false, false, 1.0f, a.View(), b.View(), 0.0f, c.MutView()).ok());
    for (size_t i = 0; i < 6; ++i) EXPECT_EQ(c.Get(i), 0.0);
  }
}

TEST(KernelsGemmDeathTest, MismatchedShapesFailTheCheck) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  TestMatrix a(kF32, 4, 3);
  TestMatrix b(kF32, 4, 5);  // op(a) is 4x3, so b needs 3 rows
  TestMatrix c(kF32, 4, 5);
  EXPECT_DEATH(Gemm(false, false, 1.0f, a.View(), b.View(), 0.0f, c.MutView()),
               "Gemm: op\\(a\\) is 4x3 but op\\(b\\) is 4x5");
  TestMatrix wrong_c(kF32, 5, 4);
  EXPECT_DEATH(
      Gemm(false, true, 1.0f, a.View(), TestMatrix(kF32, 5, 3).View(), 0.0f, wrong_c.MutView()),
      "Gemm: c is 5x4, want 4x5");
}

}  // namespace
}  // namespace coupler::kernels
