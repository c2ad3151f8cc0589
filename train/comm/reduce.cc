#include "train/comm/reduce.h"

#include <cstdint>
#include <type_traits>

#include "runtime/check.h"
#include "runtime/precision/half.h"

namespace coupler::comm {
namespace {


// How one element type is loaded into its accumulator and stored back.
template <typename T>
struct Plain {
  using Storage = T;
  using Acc = T;
  static Acc Load(Storage v) { return v; }
  static Storage Store(Acc v) { return v; }
};

template <ElementType kFormat>
struct Half {
  using Storage = uint16_t;
  using Acc = float;
  static Acc Load(Storage v) { return precision::DecodeHalf(v, kFormat); }
  static Storage Store(Acc v) { return precision::EncodeHalf(v, kFormat); }
};

template <typename Acc>
Acc Combine(Acc a, Acc b, ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      if constexpr (std::is_integral_v<Acc>) {  // wrap rather than overflow (undefined)
        using U = std::make_unsigned_t<Acc>;
        return static_cast<Acc>(static_cast<U>(a) + static_cast<U>(b));
      } else {
        return a + b;
      }
    case ReduceOp::kMax:
      return b > a ? b : a;
    case ReduceOp::kMin:
      return b < a ? b : a;
  }
  return a;
}

template <typename Traits>
void ReduceTyped(std::span<const void* const> inputs, void* out, size_t count, ReduceOp op) {
  using Storage = typename Traits::Storage;
  auto* dst = static_cast<Storage*>(out);
  for (size_t i = 0; i < count; ++i) {
    auto acc = Traits::Load(static_cast<const Storage*>(inputs[0])[i]);
    for (size_t r = 1; r < inputs.size(); ++r) {
      acc = Combine(acc, Traits::Load(static_cast<const Storage*>(inputs[r])[i]), op);
    }
    dst[i] = Traits::Store(acc);
  }
}

}  // namespace

void ReduceBuffers(std::span<const void* const> inputs, void* out, size_t count, ElementType type,
                   ReduceOp op) {
  COUPLER_CHECK(!inputs.empty()) << "ReduceBuffers needs at least one input";
  switch (type) {
    case ElementType::kFloat32: return ReduceTyped<Plain<float>>(inputs, out, count, op);
    case ElementType::kFloat64: return ReduceTyped<Plain<double>>(inputs, out, count, op);
    case ElementType::kInt32: return ReduceTyped<Plain<int32_t>>(inputs, out, count, op);
    case ElementType::kInt64:
    case ElementType::kDatetime64: return ReduceTyped<Plain<int64_t>>(inputs, out, count, op);
    case ElementType::kBool: return ReduceTyped<Plain<uint8_t>>(inputs, out, count, op);
    case ElementType::kFloat16: return ReduceTyped<Half<ElementType::kFloat16>>(inputs, out, count, op);
    case ElementType::kBFloat16: return ReduceTyped<Half<ElementType::kBFloat16>>(inputs, out, count, op);
  }
}

}  // namespace coupler::comm
