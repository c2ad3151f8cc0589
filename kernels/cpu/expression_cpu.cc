// Each instruction is a switch outside a loop over one block of rows, with the element math in
// small lambdas the compiler inlines and vectorizes. Loads of float columns are not copied: the
// register points into the column. Square roots use SSE2 (sqrtps/sqrtpd are the IEEE operation
// of the scalar call, which cannot vectorize while it may set errno).
#include "kernels/cpu/expression_cpu.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace coupler::kernels {
namespace {

using expr::Instruction;
using expr::OpCode;
using expr::ValueType;

// Sources never alias the destination (see the double buffering below), hence __restrict.
template <typename T, typename F>
void Map1(const void* a, void* out, size_t n, F f) {
  const T* __restrict x = static_cast<const T*>(a);
  T* __restrict o = static_cast<T*>(out);
  for (size_t i = 0; i < n; ++i) o[i] = f(x[i]);
}

template <typename T, typename R, typename F>
void Map2(const void* a, const void* b, void* out, size_t n, F f) {
  const T* __restrict x = static_cast<const T*>(a);
  const T* __restrict y = static_cast<const T*>(b);
  R* __restrict o = static_cast<R*>(out);
  for (size_t i = 0; i < n; ++i) o[i] = f(x[i], y[i]);
}

template <typename T>
void Clip(const void* a, const void* b, const void* c, void* out, size_t n) {
  const T* __restrict x = static_cast<const T*>(a);
  const T* __restrict lo = static_cast<const T*>(b);
  const T* __restrict hi = static_cast<const T*>(c);
  T* __restrict o = static_cast<T*>(out);
  for (size_t i = 0; i < n; ++i) {
    // numpy's minimum(maximum(x, lo), hi): a NaN anywhere gives NaN.
    T m = x[i] < lo[i] ? lo[i] : x[i];
    m = m > hi[i] ? hi[i] : m;
    o[i] = (lo[i] != lo[i] || hi[i] != hi[i]) ? lo[i] + hi[i] : m;
  }
}

void SqrtF32(const void* a, void* out, size_t n) {
  const float* x = static_cast<const float*>(a);
  float* o = static_cast<float*>(out);
  size_t i = 0;
#if defined(__SSE2__)
  for (; i + 4 <= n; i += 4) _mm_storeu_ps(o + i, _mm_sqrt_ps(_mm_loadu_ps(x + i)));
#endif
  for (; i < n; ++i) o[i] = std::sqrt(x[i]);
}

void SqrtF64(const void* a, void* out, size_t n) {
  const double* x = static_cast<const double*>(a);
  double* o = static_cast<double*>(out);
  size_t i = 0;
#if defined(__SSE2__)
  for (; i + 2 <= n; i += 2) _mm_storeu_pd(o + i, _mm_sqrt_pd(_mm_loadu_pd(x + i)));
#endif
  for (; i < n; ++i) o[i] = std::sqrt(x[i]);
}

template <typename T>
void Arithmetic(OpCode op, const void* a, const void* b, void* out, size_t n) {
  switch (op) {
    case OpCode::kAdd: Map2<T, T>(a, b, out, n, [](T x, T y) { return x + y; }); break;
    case OpCode::kSub: Map2<T, T>(a, b, out, n, [](T x, T y) { return x - y; }); break;
    case OpCode::kMul: Map2<T, T>(a, b, out, n, [](T x, T y) { return x * y; }); break;
    case OpCode::kDiv: Map2<T, T>(a, b, out, n, [](T x, T y) { return x / y; }); break;
    default: break;
  }
}

template <typename T>
void Compare(OpCode op, const void* a, const void* b, void* out, size_t n) {
  using B = uint8_t;
  switch (op) {
    case OpCode::kLt: Map2<T, B>(a, b, out, n, [](T x, T y) { return B(x < y); }); break;
    case OpCode::kLe: Map2<T, B>(a, b, out, n, [](T x, T y) { return B(x <= y); }); break;
    case OpCode::kGt: Map2<T, B>(a, b, out, n, [](T x, T y) { return B(x > y); }); break;
    case OpCode::kGe: Map2<T, B>(a, b, out, n, [](T x, T y) { return B(x >= y); }); break;
    case OpCode::kEq: Map2<T, B>(a, b, out, n, [](T x, T y) { return B(x == y); }); break;
    case OpCode::kNe: Map2<T, B>(a, b, out, n, [](T x, T y) { return B(x != y); }); break;
    default: break;
  }
}

template <typename T>
void Unary(OpCode op, const void* a, void* out, size_t n) {
  switch (op) {
    case OpCode::kNeg: Map1<T>(a, out, n, [](T x) { return -x; }); break;
    case OpCode::kAbs: Map1<T>(a, out, n, [](T x) { return std::fabs(x); }); break;
    case OpCode::kLog: Map1<T>(a, out, n, [](T x) { return std::log(x); }); break;
    case OpCode::kSqrt:
      if constexpr (sizeof(T) == 4) SqrtF32(a, out, n); else SqrtF64(a, out, n);
      break;
    default: break;
  }
}

template <typename T>
void Fill(void* out, size_t n, T value) {
  T* o = static_cast<T*>(out);
  for (size_t i = 0; i < n; ++i) o[i] = value;
}

}  // namespace

void EvaluateExpressionCpu(const Instruction* code, size_t count, int registers,
                           const void* const* inputs, size_t rows, void* out,
                           ValueType result) {
  constexpr size_t kBlock = kExpressionBlockRows;
  // A register is two blocks of 8-byte slots (float32 and bool blocks use their front): an
  // instruction writes the block its destination is not showing, so no source ever aliases the
  // destination and the loops vectorize without overlap checks.
  std::vector<double> storage(2 * static_cast<size_t>(registers) * kBlock);
  std::vector<const void*> view(static_cast<size_t>(registers));
  const size_t result_bytes = result == ValueType::kBool ? 1 : result == ValueType::kFloat32 ? 4 : 8;
  for (size_t start = 0; start < rows; start += kBlock) {
    const size_t n = std::min(kBlock, rows - start);
    for (size_t k = 0; k < count; ++k) {
      const Instruction& in = code[k];
      double* pair = storage.data() + 2 * static_cast<size_t>(in.dst) * kBlock;
      void* own = view[in.dst] == pair ? pair + kBlock : pair;
      const void* a = view[in.src0];
      const void* b = view[in.src1];
      const bool f32 = in.type == ValueType::kFloat32;
      switch (in.op) {
        case OpCode::kLoadFloat32:
          view[in.dst] = static_cast<const float*>(inputs[in.arg]) + start;
          continue;
        case OpCode::kLoadFloat64:
          view[in.dst] = static_cast<const double*>(inputs[in.arg]) + start;
          continue;
        case OpCode::kLoadBool:
          view[in.dst] = static_cast<const uint8_t*>(inputs[in.arg]) + start;
          continue;
        case OpCode::kLoadInt64:
          {
            const int64_t* __restrict x = static_cast<const int64_t*>(inputs[in.arg]) + start;
            double* __restrict o = static_cast<double*>(own);
            constexpr int64_t kMissing = std::numeric_limits<int64_t>::min();  // io::kMissingInt64
            for (size_t i = 0; i < n; ++i) {
              o[i] = x[i] == kMissing ? std::numeric_limits<double>::quiet_NaN()
                                      : static_cast<double>(x[i]);
            }
          }
          break;
        case OpCode::kLoadInt32:
          {
            const int32_t* __restrict x = static_cast<const int32_t*>(inputs[in.arg]) + start;
            double* __restrict o = static_cast<double*>(own);
            for (size_t i = 0; i < n; ++i) o[i] = static_cast<double>(x[i]);
          }
          break;
        case OpCode::kConst:
          if (f32) {
            Fill<float>(own, n, static_cast<float>(in.value));
          } else {
            Fill<double>(own, n, in.value);
          }
          break;
        case OpCode::kToFloat64: {
          const float* __restrict x = static_cast<const float*>(a);
          double* __restrict o = static_cast<double*>(own);
          for (size_t i = 0; i < n; ++i) o[i] = static_cast<double>(x[i]);
          break;
        }
        case OpCode::kNeg:
        case OpCode::kAbs:
        case OpCode::kSqrt:
        case OpCode::kLog:
          if (f32) Unary<float>(in.op, a, own, n); else Unary<double>(in.op, a, own, n);
          break;
        case OpCode::kAdd:
        case OpCode::kSub:
        case OpCode::kMul:
        case OpCode::kDiv:
          if (f32) Arithmetic<float>(in.op, a, b, own, n); else Arithmetic<double>(in.op, a, b, own, n);
          break;
        case OpCode::kClip:
          if (f32) Clip<float>(a, b, view[in.src2], own, n); else Clip<double>(a, b, view[in.src2], own, n);
          break;
        case OpCode::kIsNan:
          if (f32) {
            Map2<float, uint8_t>(a, a, own, n, [](float x, float) { return uint8_t(x != x); });
          } else {
            Map2<double, uint8_t>(a, a, own, n, [](double x, double) { return uint8_t(x != x); });
          }
          break;
        case OpCode::kLt:
        case OpCode::kLe:
        case OpCode::kGt:
        case OpCode::kGe:
        case OpCode::kEq:
        case OpCode::kNe:
          if (f32) Compare<float>(in.op, a, b, own, n); else Compare<double>(in.op, a, b, own, n);
          break;
        case OpCode::kCodeEq:
        case OpCode::kCodeNe: {
          const int32_t* __restrict x = static_cast<const int32_t*>(inputs[in.arg]) + start;
          const int32_t code_value = static_cast<int32_t>(in.value);
          uint8_t* __restrict o = static_cast<uint8_t*>(own);
          if (in.op == OpCode::kCodeEq) {
            for (size_t i = 0; i < n; ++i) o[i] = uint8_t(x[i] == code_value);
          } else {
            for (size_t i = 0; i < n; ++i) o[i] = uint8_t(x[i] != code_value);
          }
          break;
        }
        case OpCode::kAnd:
          Map2<uint8_t, uint8_t>(a, b, own, n, [](uint8_t x, uint8_t y) { return uint8_t(x & y); });
          break;
        case OpCode::kOr:
          Map2<uint8_t, uint8_t>(a, b, own, n, [](uint8_t x, uint8_t y) { return uint8_t(x | y); });
          break;
        case OpCode::kNot:
          Map1<uint8_t>(a, own, n, [](uint8_t x) { return uint8_t(x ^ 1u); });
          break;
      }
      view[in.dst] = own;
    }
    std::memcpy(static_cast<uint8_t*>(out) + start * result_bytes, view[0], n * result_bytes);
  }
}

}  // namespace coupler::kernels
