// Where the trainer computes: a backend's kernel table (kernels/train_kernel_table.h), the
// memory its buffers live in, and the copies between that memory and the host. The MLP, the
// optimizer and the step loop call kernels() and run unchanged on the CPU kernels over host
// memory or the CUDA kernels over device memory. Every pointer a kernel or copy takes is a
// BUFFER pointer (memory of store()), except the host side of the copies.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "kernels/device_pool.h"
#include "kernels/train_kernel_table.h"
#include "train/backend/device_pool_store.h"
#include "train/memory/buffer_store.h"
#include "runtime/status.h"

namespace coupler::train {

// A CUDA backend's kernels run on the device that was current when it was created: use it from
// that thread, or after kernels::UseCudaDevice on another.
class TrainBackend {
 public:
  // The CPU kernels over host memory, so CPU results stay bit-for-bit what they always were.
  TrainBackend();
  // Makes `device` the calling thread's current device and reserves its pool: limit_bytes, or
  // the device's free memory less DevicePool's reserve when 0. Unavailable without CUDA or that
  // device; ResourceExhausted when the pool does not fit.
  static Result<std::unique_ptr<TrainBackend>> CreateCuda(int device, size_t limit_bytes);

  TrainBackend(TrainBackend&&) = default;
  TrainBackend& operator=(TrainBackend&&) = default;
  ~TrainBackend();

  const kernels::TrainKernelTable& kernels() const { return *kernels_; }
  // "cpu" or "cuda:N": what reports and logs call the device.
  const std::string& name() const { return name_; }
  // True when buffers are not host memory, so the host reaches them only through copies.
  bool on_device() const { return pool_ != nullptr; }
  // The CUDA device the buffers live on; -1 on the CPU.
  int device() const { return pool_ != nullptr ? pool_->device() : -1; }
  // Backs the MemoryBudget the model's buffers are charged to.
  memory::BufferStore& store();
  // The memory behind store() in bytes, the budget's limit when none is given; 0 = unbounded.
  size_t memory_capacity() const { return pool_ != nullptr ? pool_->limit() : 0; }

  Status Zero(void* dst, size_t bytes) { return kernels_->zero(dst, bytes); }
  Status CopyFromHost(void* dst, const void* host_src, size_t bytes) {
    return kernels_->copy_from_host(dst, host_src, bytes);
  }
  Status CopyToHost(void* host_dst, const void* src, size_t bytes) {
    return kernels_->copy_to_host(host_dst, src, bytes);
  }

 private:
  TrainBackend(const kernels::TrainKernelTable& table, std::unique_ptr<kernels::DevicePool> pool);

  const kernels::TrainKernelTable* kernels_;
  std::string name_;
  std::unique_ptr<kernels::DevicePool> pool_;  // null on the CPU
  std::unique_ptr<DevicePoolStore> store_;     // declared after pool_: destroyed first
};

}  // namespace coupler::train
