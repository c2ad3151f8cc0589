// ArenaAllocator: the first-fit, coalescing free list behind DevicePool, on plain offsets.
#include "kernels/arena_allocator.h"

#include <optional>

#include <gtest/gtest.h>

namespace coupler::kernels {
namespace {

TEST(ArenaAllocatorTest, RoundsCapacityAndRequestsToTheAlignment) {
  ArenaAllocator arena(1000, 256);
  EXPECT_EQ(arena.capacity(), 768u);
  const std::optional<size_t> a = arena.Allocate(1);
  const std::optional<size_t> b = arena.Allocate(257);
  ASSERT_TRUE(a.has_value());
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(*a, 0u);
  EXPECT_EQ(*b, 256u);
  EXPECT_EQ(*b % 256, 0u);
  EXPECT_EQ(arena.in_use(), 768u);
  EXPECT_FALSE(arena.Allocate(1).has_value());
}

TEST(ArenaAllocatorTest, FirstFitTakesTheLowestHoleThatFits) {
  ArenaAllocator arena(9 * 256, 256);
  const size_t a = *arena.Allocate(256);
  const size_t b = *arena.Allocate(2 * 256);
  const size_t c = *arena.Allocate(256);
  const size_t d = *arena.Allocate(3 * 256);
  EXPECT_EQ(d, 4u * 256);
  arena.Free(a);  // hole of 1 block at 0
  arena.Free(c);  // hole of 1 block at 3*256
  // Two blocks fit in neither hole: they come from the tail.
  EXPECT_EQ(*arena.Allocate(256 + 1), 7u * 256);
  // One block goes to the lowest hole.
  EXPECT_EQ(*arena.Allocate(256), 0u);
  EXPECT_EQ(*arena.Allocate(256), 3u * 256);
  (void)b;
}

TEST(ArenaAllocatorTest, FreeCoalescesWithBothNeighbours) {
  ArenaAllocator arena(4 * 256, 256);
  const size_t a = *arena.Allocate(256);
  const size_t b = *arena.Allocate(256);
  const size_t c = *arena.Allocate(256);
  const size_t d = *arena.Allocate(256);
  arena.Free(a);
  arena.Free(c);
  EXPECT_EQ(arena.free_block_count(), 2u);
  arena.Free(b);  // joins a and c into one hole of 3 blocks
  EXPECT_EQ(arena.free_block_count(), 1u);
  EXPECT_EQ(arena.largest_free_block(), 3u * 256);
  EXPECT_EQ(*arena.Allocate(3 * 256), 0u);
  arena.Free(0);
  arena.Free(d);
  EXPECT_EQ(arena.free_block_count(), 1u);
  EXPECT_EQ(arena.largest_free_block(), 4u * 256);
  EXPECT_EQ(arena.in_use(), 0u);
  EXPECT_EQ(*arena.Allocate(4 * 256), 0u);
}

TEST(ArenaAllocatorTest, ExhaustionLeavesTheArenaUnchanged) {
  ArenaAllocator arena(1024, 256);
  EXPECT_FALSE(arena.Allocate(1025).has_value());
  EXPECT_EQ(arena.in_use(), 0u);
  EXPECT_EQ(*arena.Allocate(1024), 0u);
  EXPECT_FALSE(arena.Allocate(1).has_value());
  EXPECT_EQ(arena.in_use(), 1024u);
  // A request too large to round up fails instead of wrapping to a small block.
  arena.Free(0);
  EXPECT_FALSE(arena.Allocate(~size_t{0}).has_value());
  EXPECT_EQ(arena.in_use(), 0u);
}

TEST(ArenaAllocatorTest, FragmentationFailsEvenWithEnoughFreeBytes) {
  ArenaAllocator arena(6 * 256, 256);
  size_t blocks[6];
  for (size_t& b : blocks) b = *arena.Allocate(256);
  arena.Free(blocks[0]);
  arena.Free(blocks[2]);
  arena.Free(blocks[4]);
  // Half the arena is free, but in three separate single-block holes.
  EXPECT_EQ(arena.capacity() - arena.in_use(), 3u * 256);
  EXPECT_EQ(arena.largest_free_block(), 256u);
  EXPECT_FALSE(arena.Allocate(2 * 256).has_value());
  // Freeing the block between two holes makes room.
  arena.Free(blocks[3]);
  EXPECT_EQ(*arena.Allocate(3 * 256), 2u * 256);
}

TEST(ArenaAllocatorTest, ReusesFreedSpaceAcrossSteps) {
  ArenaAllocator arena(4096, 256);
  for (int step = 0; step < 100; ++step) {
    const size_t a = *arena.Allocate(1000);
    const size_t b = *arena.Allocate(3000);
    EXPECT_EQ(a, 0u);
    EXPECT_EQ(b, 1024u);
    arena.Free(b);
    arena.Free(a);
  }
  EXPECT_EQ(arena.free_block_count(), 1u);
}

TEST(ArenaAllocatorDeathTest, FreeingAnUnknownOffsetIsABug) {
  ArenaAllocator arena(1024, 256);
  EXPECT_DEATH(arena.Free(256), "not an allocated block");
}

}  // namespace
}  // namespace coupler::kernels
