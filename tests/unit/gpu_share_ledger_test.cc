// Fractional GPUs, the packing rule the worker and the coordinator share: shares packed
// best-fit within each device's memory, waiting when none has room, and a share no device
// could ever hold recognised at once.
#include "runtime/pool/gpu_share_ledger.h"

#include <gtest/gtest.h>

namespace coupler::pool {
namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;

TEST(GpuShareLedger, PacksSharesOntoOneDeviceWithinItsMemory) {
  GpuShareLedger ledger({{0, 16 * kGiB}});
  EXPECT_EQ(ledger.Reserve(4 * kGiB), 0);
  EXPECT_EQ(ledger.Reserve(4 * kGiB), 0);
  EXPECT_EQ(ledger.Reserve(8 * kGiB), 0);
  EXPECT_EQ(ledger.reserved(0), 16 * kGiB);
  EXPECT_FALSE(ledger.FitsNow(1));
  EXPECT_EQ(ledger.Reserve(1), std::nullopt);  // full: the task waits
  ledger.Release(0, 4 * kGiB);
  EXPECT_TRUE(ledger.FitsNow(4 * kGiB));
  EXPECT_FALSE(ledger.FitsNow(4 * kGiB + 1));
  EXPECT_EQ(ledger.Reserve(4 * kGiB), 0);
  EXPECT_EQ(ledger.Reserve(1), std::nullopt);
}

TEST(GpuShareLedger, BestFitKeepsRoomForALargeShare) {
  GpuShareLedger ledger({{0, 16 * kGiB}, {1, 8 * kGiB}});
  // Small shares go to the tighter device, so the 16 GiB one stays whole for a big share.
  EXPECT_EQ(ledger.Reserve(2 * kGiB), 1);
  EXPECT_EQ(ledger.Reserve(2 * kGiB), 1);
  EXPECT_EQ(ledger.Reserve(12 * kGiB), 0);
  EXPECT_EQ(ledger.Reserve(4 * kGiB), 0);
  EXPECT_EQ(ledger.Reserve(4 * kGiB), 1);
  EXPECT_EQ(ledger.Reserve(1 * kGiB), std::nullopt);
  EXPECT_EQ(ledger.reserved(0), 16 * kGiB);
  EXPECT_EQ(ledger.reserved(1), 8 * kGiB);
}

TEST(GpuShareLedger, KnowsAShareLargerThanAnyDevice) {
  GpuShareLedger ledger({{0, 16 * kGiB}, {3, 80 * kGiB}});
  EXPECT_TRUE(ledger.CanEverFit(80 * kGiB));
  EXPECT_FALSE(ledger.CanEverFit(80 * kGiB + 1));
  EXPECT_EQ(ledger.largest_capacity(), 80 * kGiB);
  EXPECT_EQ(ledger.Reserve(81 * kGiB), std::nullopt);
  EXPECT_EQ(ledger.Reserve(20 * kGiB), 3);
}

TEST(GpuShareLedger, ReleaseNeverUnderflowsAndIgnoresUnknownDevices) {
  GpuShareLedger ledger({{0, 4 * kGiB}});
  ledger.Release(0, kGiB);
  ledger.Release(7, kGiB);
  EXPECT_EQ(ledger.reserved(0), 0u);
  EXPECT_EQ(ledger.reserved(7), 0u);
  EXPECT_FALSE(ledger.empty());
  EXPECT_TRUE(GpuShareLedger({}).empty());
}

}  // namespace
}  // namespace coupler::pool
