// MemoryBudget over a pluggable BufferStore: the budget keeps the accounting and the limit, the
// store backs and frees the blocks exactly once, and a full store is the same ResourceExhausted
// ("out of device memory") the trainer backs off from, naming where the memory ran out.
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include <gtest/gtest.h>

#include "train/memory/buffer_store.h"
#include "train/memory/memory_budget.h"

namespace coupler::memory {
namespace {

// Host memory that counts its calls and refuses requests on demand.
class FakeStore final : public BufferStore {
 public:
  Result<void*> Allocate(size_t bytes, std::string_view what) override {
    ++allocations;
    if (fail_with_oom) return ResourceExhausted("fake store full: " + std::string(what));
    if (fail_with_other) return Internal("fake store broken");
    void* data = std::calloc(1, bytes);
    live_bytes += bytes;
    return data;
  }
  void Free(void* data, size_t bytes) noexcept override {
    ++frees;
    live_bytes -= bytes;
    std::free(data);
  }
  std::string_view where() const override { return "on the fake device"; }

  int allocations = 0;
  int frees = 0;
  size_t live_bytes = 0;
  bool fail_with_oom = false;
  bool fail_with_other = false;
};

TEST(MemoryBufferStoreTest, BuffersComeFromTheStoreAndGoBackOnce) {
  FakeStore store;
  {
    MemoryBudget budget(0, &store);
    auto a = budget.Allocate(100, MemoryKind::kMaster, "masters");
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    EXPECT_EQ(store.allocations, 1);
    EXPECT_EQ(store.live_bytes, 100u);
    const auto* bytes = a->as<unsigned char>();
    for (size_t i = 0; i < 100; ++i) ASSERT_EQ(bytes[i], 0) << "byte " << i;

    DeviceBuffer moved = std::move(*a);
    DeviceBuffer target;
    target = std::move(moved);
    EXPECT_EQ(store.frees, 0);
    target = {};
    EXPECT_EQ(store.frees, 1);
    EXPECT_EQ(store.live_bytes, 0u);
    EXPECT_EQ(budget.in_use(), 0u);
    EXPECT_EQ(budget.peak(), 100u);

    auto empty = budget.Allocate(0, MemoryKind::kData, "nothing");
    ASSERT_TRUE(empty.ok());
    EXPECT_EQ(store.allocations, 1) << "a zero-byte buffer must not reach the store";
    auto kept = budget.Allocate(8, MemoryKind::kData, "kept");
    ASSERT_TRUE(kept.ok());
  }
  EXPECT_EQ(store.allocations, 2);
  EXPECT_EQ(store.frees, 2) << "the buffer alive at scope end is freed by its destructor";
  EXPECT_EQ(store.live_bytes, 0u);
}

TEST(MemoryBufferStoreTest, TheBudgetLimitIsCheckedBeforeTheStore) {
  FakeStore store;
  MemoryBudget budget(64, &store);
  auto big = budget.Allocate(65, MemoryKind::kActivation, "activations of layer 1");
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(store.allocations, 0);
}

TEST(MemoryBufferStoreTest, AFullStoreIsOutOfDeviceMemoryNamingWhere) {
  FakeStore store;
  MemoryBudget budget(0, &store);
  auto first = budget.Allocate(32, MemoryKind::kMaster, "masters");
  ASSERT_TRUE(first.ok());
  store.fail_with_oom = true;
  auto refused = budget.Allocate(2048, MemoryKind::kActivation, "activation gradients");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted);
  const std::string message = refused.status().message();
  EXPECT_NE(message.find("out of device memory"), std::string::npos) << message;
  EXPECT_NE(message.find("activation gradients"), std::string::npos) << message;
  EXPECT_NE(message.find("on the fake device"), std::string::npos) << message;
  EXPECT_NE(message.find("2.0 KiB"), std::string::npos) << message;
  EXPECT_EQ(budget.in_use(), 32u) << "a refused request charges nothing";
  EXPECT_EQ(budget.in_use(MemoryKind::kActivation), 0u);
}

TEST(MemoryBufferStoreTest, OtherStoreErrorsPassThrough) {
  FakeStore store;
  MemoryBudget budget(0, &store);
  store.fail_with_other = true;
  auto refused = budget.Allocate(16, MemoryKind::kData, "labels");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInternal);
  EXPECT_EQ(budget.in_use(), 0u);
}

TEST(MemoryBufferStoreTest, TheDefaultStoreIsHostMemory) {
  MemoryBudget budget(0);
  EXPECT_EQ(&budget.store(), &HostBufferStore::Instance());
  EXPECT_EQ(budget.store().where(), "on the host");
}

}  // namespace
}  // namespace coupler::memory
