#include "kernels/train_kernel_table.h"

#if defined(COUPLER_WITH_CUDA)
#include "kernels/cuda/train_table_cuda.h"
#else
#include "kernels/nocuda/not_built.h"
#endif

namespace coupler::kernels {

Result<const TrainKernelTable*> CudaTrainKernels() {
#if defined(COUPLER_WITH_CUDA)
  return &CudaTrainKernelTable();
#else
  return NotBuilt("the CUDA training kernels");
#endif
}

}  // namespace coupler::kernels
