#include "kernels/cpu/batch_cpu.h"
#include "kernels/cpu/column_loop.h"
#include "kernels/elementwise.h"

namespace coupler::kernels {

void CastToFp16Cpu(const float* in, uint16_t* out, size_t n) {
  MapColumn(in, out, n, [](float v) { return CastToFp16Value(v); });
}

void CastToBf16Cpu(const float* in, uint16_t* out, size_t n) {
  MapColumn(in, out, n, [](float v) { return CastToBf16Value(v); });
}

}  // namespace coupler::kernels
