// The CUDA-free half of DevicePool: the bookkeeping over its arena. Creating, freeing and
// copying touch CUDA and live in kernels/cuda/device_pool.cc (kernels/nocuda/ without CUDA).
#include "kernels/device_pool.h"

#include <algorithm>
#include <string>
#include <utility>

#include "runtime/util/byte_size.h"

namespace coupler::kernels {

DeviceAllocation::DeviceAllocation(DeviceAllocation&& other) noexcept
    : pool_(std::exchange(other.pool_, nullptr)),
      data_(std::exchange(other.data_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)),
      offset_(std::exchange(other.offset_, 0)) {}

DeviceAllocation& DeviceAllocation::operator=(DeviceAllocation&& other) noexcept {
  if (this != &other) {
    Release();
    pool_ = std::exchange(other.pool_, nullptr);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    offset_ = std::exchange(other.offset_, 0);
  }
  return *this;
}

void DeviceAllocation::Release() noexcept {
  if (pool_ != nullptr && data_ != nullptr) pool_->Return(offset_);
  pool_ = nullptr;
  data_ = nullptr;
  bytes_ = 0;
  offset_ = 0;
}

DevicePool::DevicePool(int device, void* base, size_t capacity)
    : device_(device), base_(base), arena_(capacity, kAlignment) {}

Result<DeviceAllocation> DevicePool::Allocate(size_t bytes, std::string_view what) {
  DeviceAllocation allocation;
  if (bytes == 0) return allocation;
  std::lock_guard<std::mutex> lock(mu_);
  const std::optional<size_t> offset = arena_.Allocate(bytes);
  if (!offset.has_value()) {
    using util::FormatBytes;
    std::string message = "out of device memory: " + std::string(what) + " needs " +
                          FormatBytes(bytes) + ", " + FormatBytes(arena_.in_use()) + " of " +
                          FormatBytes(arena_.capacity()) + " in use on device " +
                          std::to_string(device_);
    // Enough free bytes in total but no hole large enough: say so, or the numbers look wrong.
    if (arena_.RoundUp(bytes) <= arena_.capacity() - arena_.in_use()) {
      message += " (fragmented: largest free block " +
                 FormatBytes(arena_.largest_free_block()) + ")";
    }
    return ResourceExhausted(std::move(message));
  }
  peak_ = std::max(peak_, arena_.in_use());
  allocation.pool_ = this;
  allocation.data_ = static_cast<char*>(base_) + *offset;
  allocation.bytes_ = bytes;
  allocation.offset_ = *offset;
  return allocation;
}

size_t DevicePool::in_use() const {
  std::lock_guard<std::mutex> lock(mu_);
  return arena_.in_use();
}

size_t DevicePool::peak() const {
  std::lock_guard<std::mutex> lock(mu_);
  return peak_;
}

void DevicePool::Return(size_t offset) noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  arena_.Free(offset);
}

}  // namespace coupler::kernels
