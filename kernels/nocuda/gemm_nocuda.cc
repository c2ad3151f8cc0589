// GemmCuda in a CPU-only build: no device to run it on.
#include "kernels/gemm_cuda.h"

namespace coupler::kernels {

Status GemmCuda(bool /*trans_a*/, bool /*trans_b*/, float /*alpha*/, ConstMatrix /*a*/,
                ConstMatrix /*b*/, float /*beta*/, MutMatrix /*c*/) {
  return Unavailable("GemmCuda: coupler was built without CUDA");
}

}  // namespace coupler::kernels
