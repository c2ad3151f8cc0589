#include "train/backend/backend_bucket_math.h"

namespace coupler::train {

Result<void*> BackendBucketMath::Scratch(size_t bytes) {
  if (scratch_.bytes() < bytes) {
    scratch_ = {};  // give the old one back first, so growing never needs both
    COUPLER_ASSIGN_OR_RETURN(scratch_, budget_.Allocate(bytes, memory::MemoryKind::kWorkspace,
                                                        "gradient bucket staging"));
  }
  return scratch_.data();
}

}  // namespace coupler::train
