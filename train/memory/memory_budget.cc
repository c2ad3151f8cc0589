#include "train/memory/memory_budget.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <new>
#include <utility>

#include "runtime/check.h"
#include "runtime/util/byte_size.h"

namespace coupler::memory {
namespace {

size_t Index(MemoryKind kind) { return static_cast<size_t>(kind); }

}  // namespace

std::string_view MemoryKindName(MemoryKind kind) {
  switch (kind) {
    case MemoryKind::kMaster: return "master weights";
    case MemoryKind::kGradient: return "gradients";
    case MemoryKind::kOptimizer: return "optimizer state";
    case MemoryKind::kComputeCopy: return "compute copies";
    case MemoryKind::kActivation: return "activations";
    case MemoryKind::kWorkspace: return "workspace";
    case MemoryKind::kData: return "input data";
  }
  return "unknown";
}

// --- DeviceBuffer -------------------------------------------------------------------------

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : budget_(std::exchange(other.budget_, nullptr)),
      data_(std::exchange(other.data_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)),
      kind_(other.kind_) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    Release();
    budget_ = std::exchange(other.budget_, nullptr);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    kind_ = other.kind_;
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() { Release(); }

void DeviceBuffer::Release() noexcept {
  if (budget_ != nullptr) {
    if (data_ != nullptr) budget_->store_->Free(data_, bytes_);
    budget_->Return(bytes_, kind_);
  }
  budget_ = nullptr;
  data_ = nullptr;
  bytes_ = 0;
}

// --- MemoryBudget -------------------------------------------------------------------------

MemoryBudget::MemoryBudget(size_t limit_bytes, BufferStore* store)
    : limit_(limit_bytes), store_(store != nullptr ? store : &HostBufferStore::Instance()) {}

Result<DeviceBuffer> MemoryBudget::Allocate(size_t bytes, MemoryKind kind, std::string_view what) {
  DeviceBuffer buffer;
  buffer.kind_ = kind;
  if (bytes == 0) return buffer;  // nothing to charge or free; data() stays null

  // Written as a subtraction so a huge request cannot wrap around and pass.
  if (limit_ != 0 && bytes > limit_ - in_use_) {
    return ResourceExhausted("out of device memory: " + std::string(what) + " needs " +
                             util::FormatBytes(bytes) + ", " + util::FormatBytes(in_use_) + " of " +
                             util::FormatBytes(limit_) + " in use");
  }
  Result<void*> data = store_->Allocate(bytes, what);
  if (!data.ok()) {
    if (data.status().code() != StatusCode::kResourceExhausted) return data.status();
    // The store cannot back the request even though the budget allows it: still out of
    // memory, so callers back off the same way.
    std::string message = "out of device memory: allocating " + util::FormatBytes(bytes) + " for ";
    message += what;
    message += " failed ";
    message += store_->where();
    message += " (" + util::FormatBytes(in_use_) + " already in use)";
    return ResourceExhausted(message);
  }

  buffer.budget_ = this;
  buffer.data_ = *data;
  buffer.bytes_ = bytes;
  in_use_ += bytes;
  in_use_by_kind_[Index(kind)] += bytes;
  UpdatePeaks();
  return buffer;
}

size_t MemoryBudget::in_use(MemoryKind kind) const { return in_use_by_kind_[Index(kind)]; }

size_t MemoryBudget::peak(MemoryKind kind) const { return peak_by_kind_[Index(kind)]; }

void MemoryBudget::ResetPeaks() {
  peak_ = 0;
  peak_working_ = 0;
  peak_by_kind_.fill(0);
  UpdatePeaks();  // the peaks restart from what is held now, not from zero
}

void MemoryBudget::Return(size_t bytes, MemoryKind kind) noexcept {
  COUPLER_CHECK(in_use_by_kind_[Index(kind)] >= bytes && in_use_ >= bytes)
      << "returning " << bytes << " bytes of " << MemoryKindName(kind) << " never charged";
  in_use_ -= bytes;
  in_use_by_kind_[Index(kind)] -= bytes;
}

void MemoryBudget::UpdatePeaks() {
  peak_ = std::max(peak_, in_use_);
  for (size_t i = 0; i < kMemoryKindCount; ++i) {
    peak_by_kind_[i] = std::max(peak_by_kind_[i], in_use_by_kind_[i]);
  }
  const size_t working = in_use_by_kind_[Index(MemoryKind::kActivation)] +
                         in_use_by_kind_[Index(MemoryKind::kComputeCopy)] +
                         in_use_by_kind_[Index(MemoryKind::kWorkspace)];
  peak_working_ = std::max(peak_working_, working);
}

}  // namespace coupler::memory
