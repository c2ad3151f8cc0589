// The device-resident benchmark kernels in a CPU-only build: the benchmarks skip before these.
#include "bench/kernels_on_device.h"
#include "kernels/nocuda/not_built.h"

namespace coupler::bench {

Status StandardizeOnDevice(const float*, float*, size_t, double, double) {
  return kernels::NotBuilt("standardize");
}

Status ClipOnDevice(const float*, float*, size_t, float, float) {
  return kernels::NotBuilt("clip");
}

Status CastOnDevice(const float*, uint16_t*, size_t, ElementType) {
  return kernels::NotBuilt("cast");
}

Result<kernels::ColumnMoments> MomentsOnDevice(const float*, size_t) {
  return kernels::NotBuilt("column_stats");
}

Result<size_t> FilterMapOnDevice(const float*, const float*, size_t, float, uint8_t*, float*) {
  return kernels::NotBuilt("filter_map");
}

}  // namespace coupler::bench
