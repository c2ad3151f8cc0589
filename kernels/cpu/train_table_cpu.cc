#include "kernels/train_kernel_table.h"

namespace coupler::kernels {

const TrainKernelTable& CpuTrainKernels() {
  static constexpr TrainKernelTable kTable{
      .backend = "cpu",
      .gemm = &Gemm,
      .add_bias_activate = &AddBiasActivate,
      .relu_backward = &ReluBackward,
      .bias_grad_accumulate = &BiasGradAccumulate,
      .softmax_cross_entropy = &SoftmaxCrossEntropy,
      .round_copy = &RoundCopy,
      .widen_copy = &WidenCopy,
      .scale = &Scale,
      .all_finite = &AllFinite,
      .unscale_all_finite = &UnscaleAllFinite,
      .sum_squares = &SumSquares,
      .sgd_momentum_step = &SgdMomentumStep,
      .adamw_step = &AdamWStep,
      .zero = &FillZero,
      .copy_from_host = &CopyBytes,
      .copy_to_host = &CopyBytes,
      .divide = &Divide,
      .pack_half = &PackHalf,
      .unpack_half = &UnpackHalf,
  };
  return kTable;
}

}  // namespace coupler::kernels
