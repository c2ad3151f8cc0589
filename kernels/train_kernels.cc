// Backend-independent parts of the training kernels; the loops live in kernels/cpu/ (and
// kernels/cuda/ for the device twin).
#include "kernels/train_kernels.h"

#include "runtime/check.h"

namespace coupler::kernels {

size_t StorageBytes(Storage storage) {
  switch (storage) {
    case Storage::kFloat32:
      return 4;
    case Storage::kFp16:
    case Storage::kBf16:
      return 2;
  }
  COUPLER_CHECK(false) << "unknown Storage " << static_cast<int>(storage);
  return 0;
}

const char* StorageName(Storage storage) {
  switch (storage) {
    case Storage::kFloat32: return "fp32";
    case Storage::kFp16: return "fp16";
    case Storage::kBf16: return "bf16";
  }
  return "?";
}

}  // namespace coupler::kernels
