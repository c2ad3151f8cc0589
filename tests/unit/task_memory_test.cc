// A worker keeps shard-sized buffers between tasks (worker/task_memory.h): once set, an 8 MiB
// block comes from the heap, not from its own mmap that free would hand back to the kernel.
#include "worker/task_memory.h"

#include <malloc.h>

#include <cstdlib>

#include <gtest/gtest.h>

namespace coupler::worker {
namespace {

TEST(TaskMemoryTest, ShardSizedBlocksStayInTheHeap) {
  RetainTaskMemory();
  const size_t mapped_before = mallinfo2().hblks;
  void* block = std::malloc(8 << 20);
  ASSERT_NE(block, nullptr);
  EXPECT_EQ(mallinfo2().hblks, mapped_before);  // not a block of its own mapping
  std::free(block);
}

}  // namespace
}  // namespace coupler::worker
