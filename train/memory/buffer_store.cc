#include "train/memory/buffer_store.h"

#include <cstring>
#include <new>
#include <string>

namespace coupler::memory {
namespace {

// 64 bytes: a cache line, and enough for any SIMD load the CPU kernels issue.
constexpr std::align_val_t kAlignment{64};

}  // namespace

Result<void*> HostBufferStore::Allocate(size_t bytes, std::string_view what) {
  void* data = ::operator new(bytes, kAlignment, std::nothrow);
  if (data == nullptr) {
    return ResourceExhausted("the host cannot back " + std::to_string(bytes) + " bytes for " +
                             std::string(what));
  }
  std::memset(data, 0, bytes);
  return data;
}

void HostBufferStore::Free(void* data, size_t /*bytes*/) noexcept {
  ::operator delete(data, kAlignment);
}

HostBufferStore& HostBufferStore::Instance() {
  static HostBufferStore store;
  return store;
}

}  // namespace coupler::memory
