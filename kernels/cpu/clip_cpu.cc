#include "kernels/cpu/batch_cpu.h"
#include "kernels/cpu/column_loop.h"
#include "kernels/elementwise.h"

namespace coupler::kernels {

void ClipCpu(const float* in, float* out, size_t n, float lo, float hi) {
  MapColumn(in, out, n, [lo, hi](float v) { return ClipValue(v, lo, hi); });
}

void ClipInPlaceCpu(float* data, size_t n, float lo, float hi) {
  MapColumnInPlace(data, n, [lo, hi](float v) { return ClipValue(v, lo, hi); });
}

}  // namespace coupler::kernels
