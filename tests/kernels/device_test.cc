// Device discovery: never an error or a crash on a machine without a GPU (cudaGetDeviceCount
// fails there with cudaErrorInsufficientDriver or cudaErrorNoDevice), real facts on one with.
#include "kernels/device.h"

#include <regex>

#include <gtest/gtest.h>

#include "kernels/backend.h"

namespace coupler::kernels {
namespace {

TEST(DeviceTest, ListDevicesNeverFailsWithoutGpu) {
  const Result<std::vector<DeviceInfo>> devices = ListCudaDevices();
  ASSERT_TRUE(devices.ok()) << devices.status().ToString();
  EXPECT_EQ(devices->empty(), !HaveCudaDevice());
  if (!BuiltWithCuda()) {
    EXPECT_TRUE(devices->empty());
  }
  // A second call must give the same answer: the first must not leave CUDA in an error state.
  const Result<std::vector<DeviceInfo>> again = ListCudaDevices();
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->size(), devices->size());
}

TEST(DeviceTest, RuntimeVersionMatchesBuild) {
  const std::string version = CudaRuntimeVersion();
  if (BuiltWithCuda()) {
    EXPECT_TRUE(std::regex_match(version, std::regex(R"(\d+\.\d+)"))) << version;
  } else {
    EXPECT_EQ(version, "none");
  }
}

TEST(DeviceTest, PickBackendFallsBackToCpuWithoutDevice) {
  if (HaveCudaDevice()) GTEST_SKIP() << "a CUDA device is present";
  EXPECT_EQ(PickBackend(), Backend::kCpu);
  EXPECT_EQ(BackendName(Backend::kCpu), "cpu");
  EXPECT_EQ(BackendName(Backend::kCuda), "cuda");
}

TEST(DeviceTest, CudaDevicesReportMemoryAndCapability) {
  if (!HaveCudaDevice()) GTEST_SKIP() << "no CUDA device";
  EXPECT_EQ(PickBackend(), Backend::kCuda);
  const Result<std::vector<DeviceInfo>> devices = ListCudaDevices();
  ASSERT_TRUE(devices.ok()) << devices.status().ToString();
  ASSERT_FALSE(devices->empty());
  for (size_t i = 0; i < devices->size(); ++i) {
    const DeviceInfo& d = (*devices)[i];
    SCOPED_TRACE(d.name);
    EXPECT_EQ(d.index, static_cast<int>(i));
    EXPECT_FALSE(d.name.empty());
    EXPECT_GT(d.total_memory, 0u);
    EXPECT_LE(d.free_memory, d.total_memory);
    EXPECT_GE(d.compute_major, 7);  // CUDA 13 supports sm_75 and newer only
  }
}

}  // namespace
}  // namespace coupler::kernels
