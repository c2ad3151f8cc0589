#include <cmath>

#include "kernels/cpu/column_loop.h"
#include "kernels/cpu/preprocess_cpu.h"

namespace coupler::kernels {

size_t FilterMapCpu(const float* __restrict a, const float* __restrict b, size_t n,
                    float threshold, uint8_t* __restrict keep, float* __restrict value) {
  // Branch-free compaction: every row writes its slot and only kept rows advance the cursor,
  // so a random keep pattern costs no mispredictions. Rows not kept take sqrt(0), which keeps
  // negative products (never kept unless the threshold is negative) off libm's errno path.
  size_t kept = 0;
  for (size_t i = 0; i < n; ++i) {
    const float v = a[i] * b[i];
    const bool k = v > threshold;
    keep[i] = k;
    value[kept] = std::sqrt(k ? v : 0.0f);
    kept += k;
  }
  return kept;
}

template <typename T>
size_t CompactCpu(const T* __restrict in, const uint8_t* __restrict keep, size_t n,
                  T* __restrict out) {
  size_t kept = 0;
  for (size_t i = 0; i < n; ++i) {
    out[kept] = in[i];
    kept += keep[i] != 0;
  }
  return kept;
}

template size_t CompactCpu<float>(const float*, const uint8_t*, size_t, float*);
template size_t CompactCpu<int32_t>(const int32_t*, const uint8_t*, size_t, int32_t*);
template size_t CompactCpu<uint16_t>(const uint16_t*, const uint8_t*, size_t, uint16_t*);
template size_t CompactCpu<double>(const double*, const uint8_t*, size_t, double*);

}  // namespace coupler::kernels
