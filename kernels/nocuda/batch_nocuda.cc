// The CUDA twins in a CPU-only build. The public entry points refuse the CUDA backend before
// calling these; they answer Unavailable anyway so nothing can run a missing kernel by accident.
#include "kernels/cuda/batch_cuda.h"

namespace coupler::kernels {
namespace {

Status NotBuilt(const char* op) {
  return Unavailable(std::string(op) + ": coupler was built without CUDA "
                                       "(COUPLER_WITH_CUDA=OFF); use the CPU backend");
}

}  // namespace

Status ClipCuda(const float*, float*, size_t, float, float) { return NotBuilt("clip"); }

Status CastCuda(const float*, uint16_t*, size_t, precision::HalfFormat) {
  return NotBuilt("cast");
}

}  // namespace coupler::kernels
