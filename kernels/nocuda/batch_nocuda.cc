// The CUDA twins in a CPU-only build. The public entry points refuse the CUDA backend before
// calling these; they answer Unavailable anyway so nothing can run a missing kernel by accident.
#include "kernels/cuda/batch_cuda.h"
#include "kernels/nocuda/not_built.h"

namespace coupler::kernels {

Status ClipCuda(const float*, float*, size_t, float, float) { return NotBuilt("clip"); }

Status CastCuda(const float*, uint16_t*, size_t, precision::HalfFormat) {
  return NotBuilt("cast");
}

}  // namespace coupler::kernels
