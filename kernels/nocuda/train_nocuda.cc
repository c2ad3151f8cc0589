// The CUDA training kernels in a CPU-only build: every one answers Unavailable, so callers link
// the same way in every build and nothing runs a missing kernel by accident.
#include "kernels/train_kernels_cuda.h"
#include "kernels/nocuda/not_built.h"

namespace coupler::kernels {

Status AddBiasActivateCuda(MutMatrix, const float*, bool) { return NotBuilt("AddBiasActivate"); }
Status ReluBackwardCuda(ConstMatrix, MutMatrix) { return NotBuilt("ReluBackward"); }
Status BiasGradAccumulateCuda(ConstMatrix, float*) { return NotBuilt("BiasGradAccumulate"); }
Status SoftmaxCrossEntropyCuda(ConstMatrix, const int32_t*, float, MutMatrix*, double*,
                               size_t*) {
  return NotBuilt("SoftmaxCrossEntropy");
}
Status RoundCopyCuda(const float*, void*, Storage, size_t) { return NotBuilt("RoundCopy"); }
Status WidenCopyCuda(const void*, Storage, float*, size_t) { return NotBuilt("WidenCopy"); }
Status ScaleCuda(float*, size_t, float) { return NotBuilt("Scale"); }
Status AllFiniteCuda(const float*, size_t, bool*) { return NotBuilt("AllFinite"); }
Status UnscaleAllFiniteCuda(float*, size_t, float, bool*) {
  return NotBuilt("UnscaleAllFinite");
}
Status SgdMomentumStepCuda(float*, const float*, float*, size_t, float, float, float, void*,
                           Storage) {
  return NotBuilt("SgdMomentumStep");
}
Status AdamWStepCuda(float*, const float*, float*, float*, size_t, const AdamWParams&, int64_t,
                     void*, Storage) {
  return NotBuilt("AdamWStep");
}

Status CopyHostToDeviceCuda(void*, const void*, size_t) { return NotBuilt("CopyHostToDevice"); }
Status CopyDeviceToHostCuda(void*, const void*, size_t) { return NotBuilt("CopyDeviceToHost"); }
Status FillZeroCuda(void*, size_t) { return NotBuilt("FillZero"); }
Status DivideCuda(float*, const float*, size_t, float) { return NotBuilt("Divide"); }
Status PackHalfCuda(const float*, float, uint16_t*, size_t, Storage) {
  return NotBuilt("PackHalf");
}
Status UnpackHalfCuda(const uint16_t*, float*, size_t, Storage) { return NotBuilt("UnpackHalf"); }

}  // namespace coupler::kernels
