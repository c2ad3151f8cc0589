// The CUDA training kernel table, defined only in a build with CUDA; callers reach it through
// kernels::CudaTrainKernels() (train_kernel_table.h), which answers Unavailable without CUDA.
#pragma once

#include "kernels/train_kernel_table.h"

namespace coupler::kernels {

const TrainKernelTable& CudaTrainKernelTable();

}  // namespace coupler::kernels
