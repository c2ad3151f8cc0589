// Backend-independent parts of the training kernels; the loops live in kernels/cpu/ (and
// kernels/cuda/ for the device twin).
#include "kernels/train_kernels.h"

#include "runtime/check.h"

namespace coupler::kernels {

size_t StorageBytes(ElementType storage) {
  switch (storage) {
    case ElementType::kFloat32:
      return 4;
    case ElementType::kFloat16:
    case ElementType::kBFloat16:
      return 2;
    default:
      break;
  }
  COUPLER_CHECK(false) << "unknown Storage " << static_cast<int>(storage);
  return 0;
}

}  // namespace coupler::kernels
