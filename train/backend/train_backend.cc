#include "train/backend/train_backend.h"

#include <utility>

#include "kernels/device.h"

namespace coupler::train {

TrainBackend::TrainBackend() : kernels_(&kernels::CpuTrainKernels()), name_("cpu") {}

TrainBackend::TrainBackend(const kernels::TrainKernelTable& table,
                           std::unique_ptr<kernels::DevicePool> pool)
    : kernels_(&table),
      name_("cuda:" + std::to_string(pool->device())),
      pool_(std::move(pool)),
      store_(std::make_unique<DevicePoolStore>(*pool_, table)) {}

TrainBackend::~TrainBackend() = default;

Result<std::unique_ptr<TrainBackend>> TrainBackend::CreateCuda(int device, size_t limit_bytes) {
  COUPLER_ASSIGN_OR_RETURN(const kernels::TrainKernelTable* table, kernels::CudaTrainKernels());
  COUPLER_RETURN_IF_ERROR(kernels::UseCudaDevice(device));
  COUPLER_ASSIGN_OR_RETURN(auto pool, kernels::DevicePool::Create(device, limit_bytes));
  return std::unique_ptr<TrainBackend>(new TrainBackend(*table, std::move(pool)));
}

memory::BufferStore& TrainBackend::store() {
  if (store_ == nullptr) return memory::HostBufferStore::Instance();
  return *store_;
}

}  // namespace coupler::train
