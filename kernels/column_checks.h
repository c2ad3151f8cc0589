// Argument checks shared by the batch kernels' public entry points, so every backend sees
// only well-formed columns and the twins need no checks of their own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/status.h"

namespace coupler::kernels {

inline Status CheckSameLength(std::string_view op, size_t in_size, size_t out_size) {
  if (in_size == out_size) return Status::Ok();
  return InvalidArgument(std::string(op) + ": output has " + std::to_string(out_size) +
                         " elements but input has " + std::to_string(in_size) +
                         "; allocate the output with the input's length");
}

// True when the byte ranges share at least one byte.
inline bool Overlaps(const void* a, size_t a_bytes, const void* b, size_t b_bytes) {
  const auto a_begin = reinterpret_cast<uintptr_t>(a);
  const auto b_begin = reinterpret_cast<uintptr_t>(b);
  return a_bytes != 0 && b_bytes != 0 && a_begin < b_begin + b_bytes &&
         b_begin < a_begin + a_bytes;
}

}  // namespace coupler::kernels
