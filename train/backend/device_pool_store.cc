#include "train/backend/device_pool_store.h"

#include <utility>

namespace coupler::train {

DevicePoolStore::DevicePoolStore(kernels::DevicePool& pool,
                                 const kernels::TrainKernelTable& kernels)
    : pool_(pool), kernels_(kernels), where_("on cuda:" + std::to_string(pool.device())) {}

Result<void*> DevicePoolStore::Allocate(size_t bytes, std::string_view what) {
  COUPLER_ASSIGN_OR_RETURN(kernels::DeviceAllocation block, pool_.Allocate(bytes, what));
  // The pool does not clear what an earlier buffer left; the budget promises zeros.
  COUPLER_RETURN_IF_ERROR(kernels_.zero(block.data(), bytes));
  void* data = block.data();
  live_.emplace(data, std::move(block));
  return data;
}

void DevicePoolStore::Free(void* data, size_t /*bytes*/) noexcept { live_.erase(data); }

}  // namespace coupler::train
