// MemoryBudget and DeviceBuffer: the limit holds to the byte, a refused request charges nothing,
// moved buffers return their bytes exactly once, and the peaks the reports print are right.
#include "train/memory/memory_budget.h"

#include <cstdint>
#include <limits>
#include <string>
#include <utility>

#include <gtest/gtest.h>

namespace coupler::memory {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

bool UnderAddressSanitizer() {
#if defined(__SANITIZE_ADDRESS__)
  return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  return true;
#else
  return false;
#endif
#else
  return false;
#endif
}

TEST(MemoryBudgetTest, AllocationExactlyAtTheLimitSucceeds) {
  MemoryBudget budget(1000);
  auto buffer = budget.Allocate(1000, MemoryKind::kMaster, "masters");
  ASSERT_TRUE(buffer.ok()) << buffer.status().ToString();
  EXPECT_EQ(buffer->bytes(), 1000u);
  EXPECT_EQ(budget.in_use(), 1000u);
  EXPECT_EQ(budget.in_use(MemoryKind::kMaster), 1000u);

  auto more = budget.Allocate(1, MemoryKind::kMaster, "one more byte");
  ASSERT_FALSE(more.ok());
  EXPECT_EQ(more.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(budget.in_use(), 1000u);
}

TEST(MemoryBudgetTest, OneByteOverTheLimitFailsAndChargesNothing) {
  MemoryBudget budget(1000);
  auto too_big = budget.Allocate(1001, MemoryKind::kActivation, "activations");
  ASSERT_FALSE(too_big.ok());
  EXPECT_EQ(too_big.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(budget.in_use(), 0u);
  EXPECT_EQ(budget.in_use(MemoryKind::kActivation), 0u);
  EXPECT_EQ(budget.peak(), 0u);
  EXPECT_EQ(budget.peak(MemoryKind::kActivation), 0u);
}

TEST(MemoryBudgetTest, FillsToTheLimitInPieces) {
  MemoryBudget budget(1000);
  auto first = budget.Allocate(999, MemoryKind::kGradient, "gradients");
  ASSERT_TRUE(first.ok());
  auto last_byte = budget.Allocate(1, MemoryKind::kWorkspace, "workspace");
  ASSERT_TRUE(last_byte.ok());
  EXPECT_EQ(budget.in_use(), 1000u);
  EXPECT_FALSE(budget.Allocate(1, MemoryKind::kWorkspace, "workspace").ok());
  // A huge request must not wrap around the limit arithmetic and slip through.
  EXPECT_FALSE(
      budget.Allocate(std::numeric_limits<size_t>::max(), MemoryKind::kData, "batch").ok());
  EXPECT_EQ(budget.in_use(), 1000u);
}

TEST(MemoryBudgetTest, ErrorNamesWhatTheRequestAndTheBytesInUse) {
  MemoryBudget budget(4 * kMiB);
  auto held = budget.Allocate(3 * kMiB, MemoryKind::kActivation, "activations for layer 1");
  ASSERT_TRUE(held.ok());
  auto refused = budget.Allocate(2 * kMiB, MemoryKind::kActivation, "activations for layer 2");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message(),
            "out of device memory: activations for layer 2 needs 2.0 MiB, 3.0 MiB of 4.0 MiB in "
            "use");
}

TEST(MemoryBudgetTest, MemoryIsZeroFilledAndAligned) {
  MemoryBudget budget;
  auto buffer = budget.Allocate(1000, MemoryKind::kData, "batch");
  ASSERT_TRUE(buffer.ok());
  ASSERT_NE(buffer->data(), nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer->data()) % 64, 0u);
  EXPECT_EQ(buffer->kind(), MemoryKind::kData);
  const auto* bytes = buffer->as<unsigned char>();
  size_t nonzero = 0;
  for (size_t i = 0; i < 1000; ++i) nonzero += bytes[i] != 0;
  EXPECT_EQ(nonzero, 0u);
  buffer->as<unsigned char>()[999] = 7;  // the whole range is writable
}

TEST(MemoryBudgetTest, ReusedMemoryIsZeroFilledAgain) {
  // Fresh pages are zero anyway; a freed and re-allocated block is where a missing fill shows.
  MemoryBudget budget;
  for (int round = 0; round < 3; ++round) {
    auto buffer = budget.Allocate(4096, MemoryKind::kWorkspace, "scratch");
    ASSERT_TRUE(buffer.ok());
    auto* bytes = buffer->as<unsigned char>();
    size_t nonzero = 0;
    for (size_t i = 0; i < 4096; ++i) nonzero += bytes[i] != 0;
    EXPECT_EQ(nonzero, 0u) << "round " << round;
    for (size_t i = 0; i < 4096; ++i) bytes[i] = 0xAB;
  }
}

TEST(MemoryBudgetTest, ZeroBytesGiveAnEmptyBufferAndChargeNothing) {
  MemoryBudget budget(1);
  auto empty = budget.Allocate(0, MemoryKind::kWorkspace, "nothing");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->data(), nullptr);
  EXPECT_EQ(empty->bytes(), 0u);
  EXPECT_EQ(budget.in_use(), 0u);
}

TEST(MemoryBudgetTest, UnlimitedBudgetNeverRefusesWhatTheHostCanBack) {
  MemoryBudget budget(0);
  EXPECT_EQ(budget.limit(), 0u);
  auto a = budget.Allocate(8 * kMiB, MemoryKind::kMaster, "masters");
  auto b = budget.Allocate(8 * kMiB, MemoryKind::kOptimizer, "moments");
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(budget.in_use(), 16 * kMiB);
}

TEST(MemoryBudgetTest, HostAllocationFailureIsResourceExhausted) {
  if (UnderAddressSanitizer()) GTEST_SKIP() << "ASan aborts on impossible allocation sizes";
  MemoryBudget budget(0);
  auto impossible =
      budget.Allocate(std::numeric_limits<size_t>::max() / 2, MemoryKind::kActivation, "huge");
  ASSERT_FALSE(impossible.ok());
  EXPECT_EQ(impossible.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(impossible.status().message().find("huge"), std::string::npos);
  EXPECT_EQ(budget.in_use(), 0u);
}

TEST(MemoryBudgetTest, DestructionReturnsTheBytes) {
  MemoryBudget budget(1000);
  {
    auto buffer = budget.Allocate(600, MemoryKind::kGradient, "gradients");
    ASSERT_TRUE(buffer.ok());
    EXPECT_EQ(budget.in_use(), 600u);
  }
  EXPECT_EQ(budget.in_use(), 0u);
  EXPECT_EQ(budget.in_use(MemoryKind::kGradient), 0u);
  EXPECT_TRUE(budget.Allocate(1000, MemoryKind::kGradient, "gradients again").ok());
}

TEST(MemoryBudgetTest, MoveConstructionTransfersOwnershipAndReturnsBytesOnce) {
  MemoryBudget budget(1000);
  auto result = budget.Allocate(400, MemoryKind::kOptimizer, "moments");
  ASSERT_TRUE(result.ok());
  DeviceBuffer source = std::move(result).value();
  void* data = source.data();
  {
    DeviceBuffer target(std::move(source));
    EXPECT_EQ(target.data(), data);
    EXPECT_EQ(target.bytes(), 400u);
    EXPECT_EQ(target.kind(), MemoryKind::kOptimizer);
    EXPECT_EQ(source.data(), nullptr);  // NOLINT(bugprone-use-after-move): checking the husk
    EXPECT_EQ(source.bytes(), 0u);
    EXPECT_EQ(budget.in_use(), 400u);
  }
  EXPECT_EQ(budget.in_use(), 0u);
  // The moved-from husk is destroyed at scope end; it must not return the bytes again, which
  // would trip the budget's never-charged check.
}

TEST(MemoryBudgetTest, MoveAssignmentReleasesTheOldBufferFirst) {
  MemoryBudget budget(1000);
  auto a = budget.Allocate(300, MemoryKind::kMaster, "a");
  auto b = budget.Allocate(500, MemoryKind::kActivation, "b");
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(b.ok());
  DeviceBuffer kept = std::move(a).value();
  DeviceBuffer incoming = std::move(b).value();
  EXPECT_EQ(budget.in_use(), 800u);

  kept = std::move(incoming);
  EXPECT_EQ(budget.in_use(), 500u);
  EXPECT_EQ(budget.in_use(MemoryKind::kMaster), 0u);
  EXPECT_EQ(budget.in_use(MemoryKind::kActivation), 500u);
  EXPECT_EQ(kept.bytes(), 500u);
  EXPECT_EQ(kept.kind(), MemoryKind::kActivation);

  kept = DeviceBuffer();
  EXPECT_EQ(budget.in_use(), 0u);
}

TEST(MemoryBudgetTest, TracksPeaksPerKindAndTheComputeWorkingSet) {
  MemoryBudget budget;
  auto activation = budget.Allocate(100, MemoryKind::kActivation, "activations");
  auto workspace = budget.Allocate(50, MemoryKind::kWorkspace, "workspace");
  ASSERT_TRUE(activation.ok());
  ASSERT_TRUE(workspace.ok());
  activation = DeviceBuffer();  // activations freed before the compute copies arrive
  auto copies = budget.Allocate(30, MemoryKind::kComputeCopy, "fp16 weights");
  auto masters = budget.Allocate(1000, MemoryKind::kMaster, "masters");
  ASSERT_TRUE(copies.ok());
  ASSERT_TRUE(masters.ok());

  EXPECT_EQ(budget.in_use(), 1080u);
  EXPECT_EQ(budget.peak(), 1080u);
  EXPECT_EQ(budget.peak(MemoryKind::kActivation), 100u);
  EXPECT_EQ(budget.in_use(MemoryKind::kActivation), 0u);
  EXPECT_EQ(budget.peak(MemoryKind::kWorkspace), 50u);
  EXPECT_EQ(budget.peak(MemoryKind::kComputeCopy), 30u);
  EXPECT_EQ(budget.peak(MemoryKind::kMaster), 1000u);
  EXPECT_EQ(budget.peak(MemoryKind::kGradient), 0u);
  // 100 + 50 held together once; masters are not part of the working set.
  EXPECT_EQ(budget.peak_compute_working_set(), 150u);

  budget.ResetPeaks();
  EXPECT_EQ(budget.peak(), 1080u);  // restarts from what is still held
  EXPECT_EQ(budget.peak(MemoryKind::kActivation), 0u);
  EXPECT_EQ(budget.peak(MemoryKind::kWorkspace), 50u);
  EXPECT_EQ(budget.peak_compute_working_set(), 80u);
}

TEST(MemoryBudgetTest, KindNamesReadWellInReports) {
  EXPECT_EQ(MemoryKindName(MemoryKind::kActivation), "activations");
  EXPECT_EQ(MemoryKindName(MemoryKind::kOptimizer), "optimizer state");
  EXPECT_EQ(MemoryKindName(MemoryKind::kComputeCopy), "compute copies");
}

}  // namespace
}  // namespace coupler::memory
