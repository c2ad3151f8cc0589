#include "kernels/cpu/int8_gemm_cpu.h"

namespace coupler::kernels {
namespace {

template <typename A>
void Loop(const A* a, size_t m, size_t k, const int8_t* w, size_t n, const float* scale,
          float* c) {
  for (size_t i = 0; i < m; ++i) {
    const A* row = a + i * k;
    for (size_t j = 0; j < n; ++j) {
      const int8_t* wj = w + j * k;
      int32_t acc = 0;
      for (size_t p = 0; p < k; ++p) acc += static_cast<int32_t>(row[p]) * wj[p];
      c[i * n + j] = static_cast<float>(acc) * scale[j];
    }
  }
}

}  // namespace

void Int8GemmLoop(Int8Activations a, const int8_t* w, size_t n, const float* scale, float* c) {
  if (a.is_signed) {
    Loop(static_cast<const int8_t*>(a.data), a.rows, a.cols, w, n, scale, c);
  } else {
    Loop(static_cast<const uint8_t*>(a.data), a.rows, a.cols, w, n, scale, c);
  }
}

}  // namespace coupler::kernels
