// A task's GPU share: what the CUDA twins allocate on a thread is charged to the share set
// there, past it is ResourceExhausted, and other threads and unshared code are not limited.
// The accounting itself needs no GPU; the Cuda test runs a real kernel over its share.
#include "kernels/device_share.h"

#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/clip.h"
#include "kernels/device.h"

namespace coupler::kernels {
namespace {

TEST(DeviceShare, ChargesWithinTheShareAndRefusesPastIt) {
  const ScopedDeviceShare share(100);
  EXPECT_TRUE(ChargeDeviceShare(60).ok());
  const Status past = ChargeDeviceShare(41);
  EXPECT_EQ(past.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(past.message().find("GPU share"), std::string::npos) << past.message();
  EXPECT_EQ(DeviceShareUsed(), 60u);  // the refused request took nothing
  EXPECT_TRUE(ChargeDeviceShare(40).ok());
  ReturnDeviceShare(60);
  EXPECT_EQ(DeviceShareUsed(), 40u);
  ReturnDeviceShare(1000);  // never below zero
  EXPECT_EQ(DeviceShareUsed(), 0u);
}

TEST(DeviceShare, NoShareMeansNoLimit) {
  EXPECT_TRUE(ChargeDeviceShare(size_t{1} << 40).ok());
  EXPECT_EQ(DeviceShareUsed(), 0u);
  const ScopedDeviceShare none(0);
  EXPECT_TRUE(ChargeDeviceShare(size_t{1} << 40).ok());
}

TEST(DeviceShare, EachThreadHasItsOwnShareAndScopesRestore) {
  const ScopedDeviceShare outer(10);
  ASSERT_TRUE(ChargeDeviceShare(10).ok());
  std::thread neighbour([] {
    const ScopedDeviceShare mine(1000);
    EXPECT_TRUE(ChargeDeviceShare(900).ok());  // the other thread's full share is not ours
  });
  neighbour.join();
  {
    const ScopedDeviceShare inner(5);
    EXPECT_EQ(DeviceShareUsed(), 0u);
    EXPECT_FALSE(ChargeDeviceShare(6).ok());
  }
  EXPECT_EQ(DeviceShareUsed(), 10u);
  EXPECT_FALSE(ChargeDeviceShare(1).ok());
}

// On a GPU: a task over its share fails alone; its neighbour on the same device, within its
// own share, succeeds at the same time.
TEST(DeviceShareCuda, ATaskOverItsShareFailsAloneOnTheDevice) {
  if (!HaveCudaDevice()) GTEST_SKIP() << "no CUDA device";
  std::vector<float> big(size_t{1} << 20, 2.0f);    // clip holds 2 x 4 MiB on the device
  std::vector<float> small(size_t{1} << 16, 2.0f);  // 2 x 256 KiB
  Status big_status;
  Status small_status;
  std::thread greedy([&] {
    const ScopedDeviceShare share(size_t{1} << 20);  // 1 MiB: too little
    big_status = Clip(big, -1.0f, 1.0f, Backend::kCuda);
  });
  std::thread modest([&] {
    const ScopedDeviceShare share(size_t{1} << 20);  // 1 MiB: enough
    small_status = Clip(small, -1.0f, 1.0f, Backend::kCuda);
  });
  greedy.join();
  modest.join();
  EXPECT_EQ(big_status.code(), StatusCode::kResourceExhausted) << big_status.ToString();
  EXPECT_TRUE(small_status.ok()) << small_status.ToString();
  EXPECT_EQ(small[0], 1.0f);
  EXPECT_EQ(big[0], 2.0f);  // nothing written by the refused task
}

}  // namespace
}  // namespace coupler::kernels
