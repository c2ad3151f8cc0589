#include "kernels/cpu/column_loop.h"
#include "kernels/cpu/preprocess_cpu.h"
#include "kernels/elementwise.h"

namespace coupler::kernels {

void StandardizeCpu(const float* in, float* out, size_t n, double mean, double inv_stddev) {
  MapColumn(in, out, n,
            [mean, inv_stddev](float v) { return StandardizeValue(v, mean, inv_stddev); });
}

void StandardizeInPlaceCpu(float* data, size_t n, double mean, double inv_stddev) {
  MapColumnInPlace(data, n,
                   [mean, inv_stddev](float v) { return StandardizeValue(v, mean, inv_stddev); });
}

}  // namespace coupler::kernels
