// First-fit sub-allocation of one fixed-size arena, on offsets only: the bookkeeping behind
// DevicePool, kept free of CUDA so it is unit-tested on the CPU in microseconds.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <unordered_map>

namespace coupler::kernels {

// Not thread-safe; DevicePool serializes calls.
class ArenaAllocator {
 public:
  // `alignment` must be a power of two; capacity is rounded down to a multiple of it.
  explicit ArenaAllocator(size_t capacity, size_t alignment = 256);

  // The offset of a block of at least `bytes` (rounded up to the alignment), at the lowest
  // offset that fits, or nullopt when no free block is large enough. bytes == 0 is a bug.
  std::optional<size_t> Allocate(size_t bytes);

  // Returns a block given by Allocate and merges it with free neighbours. Freeing an offset
  // that is not allocated is a bug (COUPLER_CHECK).
  void Free(size_t offset);

  size_t capacity() const { return capacity_; }
  size_t alignment() const { return alignment_; }
  size_t in_use() const { return in_use_; }  // rounded sizes of the live blocks
  size_t largest_free_block() const;
  size_t free_block_count() const { return free_.size(); }
  // The rounded size Allocate(bytes) would take (bytes rounded up to the alignment).
  size_t RoundUp(size_t bytes) const;

 private:
  size_t capacity_;
  size_t alignment_;
  size_t in_use_ = 0;
  std::map<size_t, size_t> free_;                 // offset -> size, never adjacent
  std::unordered_map<size_t, size_t> allocated_;  // offset -> rounded size
};

}  // namespace coupler::kernels
