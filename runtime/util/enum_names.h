// The one spelling of each value of a small enum numbered 0..N-1 (job, node and worker states):
// its name, and the value a name spells. Names are what people and JSON see; the numbers are
// what travels on the wire.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

namespace coupler::util {

template <class E, size_t N>
struct EnumNames {
  std::array<std::string_view, N> names;

  // The first name for a number outside the enum (never sent: the decoder refuses it).
  constexpr std::string_view Name(E value) const {
    const auto index = static_cast<size_t>(value);
    return index < N ? names[index] : names[0];
  }
  constexpr std::optional<E> Parse(std::string_view name) const {
    for (size_t i = 0; i < N; ++i) {
      if (names[i] == name) return static_cast<E>(i);
    }
    return std::nullopt;
  }
};

}  // namespace coupler::util
