#include "kernels/arena_allocator.h"

#include <algorithm>
#include <iterator>
#include <limits>

#include "runtime/check.h"

namespace coupler::kernels {

ArenaAllocator::ArenaAllocator(size_t capacity, size_t alignment)
    : capacity_(capacity - capacity % (alignment == 0 ? 1 : alignment)), alignment_(alignment) {
  COUPLER_CHECK(alignment_ != 0 && (alignment_ & (alignment_ - 1)) == 0)
      << "arena alignment " << alignment_ << " is not a power of two";
  if (capacity_ > 0) free_.emplace(0, capacity_);
}

size_t ArenaAllocator::RoundUp(size_t bytes) const {
  // Saturates instead of wrapping, so an absurd request fails instead of taking a tiny block.
  if (bytes > std::numeric_limits<size_t>::max() - (alignment_ - 1)) {
    return std::numeric_limits<size_t>::max() & ~(alignment_ - 1);
  }
  return (bytes + alignment_ - 1) & ~(alignment_ - 1);
}

std::optional<size_t> ArenaAllocator::Allocate(size_t bytes) {
  COUPLER_CHECK(bytes > 0) << "ArenaAllocator::Allocate(0)";
  const size_t size = RoundUp(bytes);
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < size) continue;
    const size_t offset = it->first;
    const size_t rest = it->second - size;
    free_.erase(it);
    if (rest > 0) free_.emplace(offset + size, rest);
    allocated_.emplace(offset, size);
    in_use_ += size;
    return offset;
  }
  return std::nullopt;
}

void ArenaAllocator::Free(size_t offset) {
  const auto found = allocated_.find(offset);
  COUPLER_CHECK(found != allocated_.end()) << "ArenaAllocator::Free(" << offset
                                           << "): not an allocated block";
  size_t start = offset;
  size_t size = found->second;
  allocated_.erase(found);
  in_use_ -= size;

  auto next = free_.lower_bound(offset);
  if (next != free_.end() && next->first == start + size) {
    size += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    const auto prev = std::prev(next);
    if (prev->first + prev->second == start) {
      start = prev->first;
      size += prev->second;
      free_.erase(prev);
    }
  }
  free_.emplace(start, size);
}

size_t ArenaAllocator::largest_free_block() const {
  size_t largest = 0;
  for (const auto& [offset, size] : free_) largest = std::max(largest, size);
  return largest;
}

}  // namespace coupler::kernels
