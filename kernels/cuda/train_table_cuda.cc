#include "kernels/cuda/train_table_cuda.h"

#include "kernels/gemm_cuda.h"
#include "kernels/train_kernels_cuda.h"

namespace coupler::kernels {

const TrainKernelTable& CudaTrainKernelTable() {
  static constexpr TrainKernelTable kTable{
      .backend = "cuda",
      .gemm = &GemmCuda,
      .add_bias_activate = &AddBiasActivateCuda,
      .relu_backward = &ReluBackwardCuda,
      .bias_grad_accumulate = &BiasGradAccumulateCuda,
      .softmax_cross_entropy = &SoftmaxCrossEntropyCuda,
      .round_copy = &RoundCopyCuda,
      .widen_copy = &WidenCopyCuda,
      .scale = &ScaleCuda,
      .all_finite = &AllFiniteCuda,
      .unscale_all_finite = &UnscaleAllFiniteCuda,
      .sum_squares = &SumSquaresCuda,
      // The table's steps update the masters only; the fused compute copy is not asked for.
      .sgd_momentum_step = [](float* w, const float* g, float* v, size_t n, float lr,
                              float momentum, float weight_decay) {
        return SgdMomentumStepCuda(w, g, v, n, lr, momentum, weight_decay);
      },
      .adamw_step = [](float* w, const float* g, float* m, float* v, size_t n,
                       const AdamWParams& params, int64_t step) {
        return AdamWStepCuda(w, g, m, v, n, params, step);
      },
      .zero = &FillZeroCuda,
      .copy_from_host = &CopyHostToDeviceCuda,
      .copy_to_host = &CopyDeviceToHostCuda,
      .divide = &DivideCuda,
      .pack_half = &PackHalfCuda,
      .unpack_half = &UnpackHalfCuda,
  };
  return kTable;
}

}  // namespace coupler::kernels
