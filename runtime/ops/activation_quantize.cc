#include "runtime/ops/activation_quantize.h"

#include <atomic>
#include <cstdint>

#include "runtime/check.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define COUPLER_HAVE_AVX512_PATH 1
#endif

namespace coupler::ops {
namespace {

std::atomic<bool> plain_for_testing{false};

// The arithmetic of one value, in the order both paths keep.
struct Step {
  const float* bias = nullptr;  // per column, or none
  bool relu = false;
  float inv = 1;                // 1 / scale
  float lo = 0, hi = 255;
};

// Round to nearest, ties to even, by the float adder itself: adding 1.5 x 2^23 leaves no bits
// below the units in the default rounding mode (|v| <= 255 here, far inside its range).
inline int32_t Level(float v, const Step& s) {
  constexpr float kRound = 12582912.0f;  // 1.5 x 2^23
  v = v * s.inv;
  if (v != v) v = 0.0f;  // NaN quantizes to 0, not to whatever the conversion makes of it
  v = v < s.hi ? v : s.hi;
  v = v > s.lo ? v : s.lo;
  v = (v + kRound) - kRound;
  return static_cast<int32_t>(v);
}

template <typename T>
void RowsPlain(const float* in, size_t rows, size_t cols, const Step& s, T* out) {
  for (size_t r = 0; r < rows; ++r) {
    const float* row = in + r * cols;
    T* o = out + r * cols;
    for (size_t j = 0; j < cols; ++j) {
      float v = row[j];
      if (s.bias != nullptr) v = v + s.bias[j];
      if (s.relu && v < 0.0f) v = 0.0f;  // NaN is not below zero: it passes, as in AddBiasActivate
      o[j] = static_cast<T>(Level(v, s));
    }
  }
}

#ifdef COUPLER_HAVE_AVX512_PATH
#define COUPLER_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl")))

// Sixteen values a step; the conversion rounds to nearest even as Level's adder trick does.
// With the ReLU, max(v x inv, 0) is both the ReLU (the product of a negative is negative) and
// Level's NaN-to-0 (max returns its second operand for a NaN, whether the NaN came in or was
// made by 0 x an infinite inv), after which nothing is NaN or below the range. The zero-masked
// forms because GCC 12 warns of the unmasked ones' undefined pass-through operand.
template <bool kRelu>
COUPLER_AVX512 inline __m512i Levels16(__m512 v, const float* bias, __mmask16 k, __m512 inv,
                                       __m512 lo, __m512 hi) {
  if (bias != nullptr) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(k, bias));
  if constexpr (kRelu) {
    v = _mm512_maskz_max_ps(k, _mm512_mul_ps(v, inv), _mm512_setzero_ps());
    v = _mm512_maskz_min_ps(k, v, hi);
  } else {
    v = _mm512_mul_ps(v, inv);
    v = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, v, _CMP_ORD_Q), v);
    v = _mm512_maskz_max_ps(k, _mm512_maskz_min_ps(k, v, hi), lo);
  }
  return _mm512_maskz_cvt_roundps_epi32(k, v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

// Rows of levels, 64 at a time narrowed by two packing steps and one dword permutation (the
// narrowing stores, vpmovdb, were half this loop's time under perf), then 16 at a time, then a
// masked tail. The levels are within the byte type's range, so the packs never saturate.
template <bool kRelu, bool kSigned>
COUPLER_AVX512 void RowsAvx512(const float* in, size_t rows, size_t cols, const Step& step,
                               uint8_t* out) {
  const __m512 inv = _mm512_set1_ps(step.inv);
  const __m512 lo = _mm512_set1_ps(step.lo);
  const __m512 hi = _mm512_set1_ps(step.hi);
  const __mmask16 all = 0xFFFF;
  // After the packs, dword 4i + k holds vector k's values 4i..4i+3; put them back in order.
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  const size_t whole = cols / 16 * 16;
  const __mmask16 tail = static_cast<__mmask16>((1u << (cols - whole)) - 1u);
  for (size_t r = 0; r < rows; ++r) {
    const float* row = in + r * cols;
    uint8_t* o = out + r * cols;
    auto bias_at = [&](size_t j) { return step.bias != nullptr ? step.bias + j : nullptr; };
    size_t j = 0;
    for (; j + 64 <= cols; j += 64) {
      __m512i q[4];
      for (size_t t = 0; t < 4; ++t) {
        q[t] = Levels16<kRelu>(_mm512_loadu_ps(row + j + 16 * t), bias_at(j + 16 * t), all, inv,
                               lo, hi);
      }
      const __m512i low = _mm512_packs_epi32(q[0], q[1]);
      const __m512i high = _mm512_packs_epi32(q[2], q[3]);
      const __m512i bytes =
          kSigned ? _mm512_packs_epi16(low, high) : _mm512_packus_epi16(low, high);
      _mm512_storeu_si512(o + j, _mm512_maskz_permutexvar_epi32(all, order, bytes));
    }
    for (; j < whole; j += 16) {
      const __m512i q = Levels16<kRelu>(_mm512_loadu_ps(row + j), bias_at(j), all, inv, lo, hi);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(o + j), _mm512_maskz_cvtepi32_epi8(all, q));
    }
    if (tail != 0) {
      const __m512i q = Levels16<kRelu>(_mm512_maskz_loadu_ps(tail, row + whole),
                                        bias_at(whole), tail, inv, lo, hi);
      _mm_mask_storeu_epi8(o + whole, tail, _mm512_maskz_cvtepi32_epi8(tail, q));
    }
  }
}

bool HasAvx512() {
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vl");
  return has;
}
#endif

void Rows(const float* in, size_t rows, size_t cols, const Step& s, bool is_signed, void* out) {
  if (rows == 0 || cols == 0) return;
#ifdef COUPLER_HAVE_AVX512_PATH
  if (HasAvx512() && !plain_for_testing.load(std::memory_order_relaxed)) {
    auto* bytes = static_cast<uint8_t*>(out);  // s8 levels are their bytes, two's complement
    if (s.relu) {
      is_signed ? RowsAvx512<true, true>(in, rows, cols, s, bytes)
                : RowsAvx512<true, false>(in, rows, cols, s, bytes);
    } else {
      is_signed ? RowsAvx512<false, true>(in, rows, cols, s, bytes)
                : RowsAvx512<false, false>(in, rows, cols, s, bytes);
    }
    return;
  }
#endif
  if (is_signed) {
    RowsPlain(in, rows, cols, s, static_cast<int8_t*>(out));
  } else {
    RowsPlain(in, rows, cols, s, static_cast<uint8_t*>(out));
  }
}

Step StepFor(float scale, bool is_signed) {
  Step s;
  s.inv = 1.0f / scale;
  s.lo = is_signed ? -127.0f : 0.0f;
  s.hi = is_signed ? 127.0f : 255.0f;
  return s;
}

}  // namespace

void UsePlainLoopForTesting(bool plain) { plain_for_testing.store(plain); }

void QuantizeValues(std::span<const float> x, float scale, bool is_signed, void* out) {
  Rows(x.data(), 1, x.size(), StepFor(scale, is_signed), is_signed, out);
}

void QuantizeActivations(std::span<const float> x, const ActivationQuant& quant, void* out) {
  QuantizeValues(x, quant.Scale(), quant.is_signed, out);
}

void QuantizeBiasRelu(std::span<const float> c, size_t cols, std::span<const float> bias,
                      const ActivationQuant& quant, void* out) {
  if (c.empty()) return;
  COUPLER_CHECK(cols > 0 && c.size() % cols == 0 && bias.size() == cols)
      << "QuantizeBiasRelu: " << c.size() << " values in rows of " << cols << " with "
      << bias.size() << " biases";
  Step s = StepFor(quant.Scale(), quant.is_signed);
  s.bias = bias.data();
  s.relu = true;
  Rows(c.data(), c.size() / cols, cols, s, quant.is_signed, out);
}

}  // namespace coupler::ops
