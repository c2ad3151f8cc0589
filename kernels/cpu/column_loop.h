// The loop shape every CPU twin uses: fixed-size inner blocks plus a scalar tail. GCC's -O2
// vectorizer (the "very cheap" cost model of RelWithDebInfo builds) only vectorizes a loop
// whose vector code replaces the scalar code whole, which a constant 16-element block does;
// -O3 vectorizes either shape.
#pragma once

#include <cstddef>

namespace coupler::kernels {

inline constexpr size_t kCpuBlock = 16;

// out[i] = f(in[i]); `in` and `out` must not overlap.
template <typename In, typename Out, typename F>
inline void MapColumn(const In* __restrict in, Out* __restrict out, size_t n, F f) {
  size_t i = 0;
  for (; i + kCpuBlock <= n; i += kCpuBlock) {
    for (size_t j = 0; j < kCpuBlock; ++j) out[i + j] = f(in[i + j]);
  }
  for (; i < n; ++i) out[i] = f(in[i]);
}

// data[i] = f(data[i]).
template <typename T, typename F>
inline void MapColumnInPlace(T* data, size_t n, F f) {
  size_t i = 0;
  for (; i + kCpuBlock <= n; i += kCpuBlock) {
    for (size_t j = 0; j < kCpuBlock; ++j) data[i + j] = f(data[i + j]);
  }
  for (; i < n; ++i) data[i] = f(data[i]);
}

}  // namespace coupler::kernels
