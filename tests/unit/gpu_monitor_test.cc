// The worker's GPU sampling through NVML: without GPUs it says "no GPUs" and loads nothing;
// without the library the reason names it; against a stand-in NVML (tests/unit/fake_nvml.cc)
// each CUDA device is found by its PCI bus id whatever NVML's order, and a failing NVML call
// becomes the reason; with the driver's NVML (GpuMonitorOnDevice, labelled `gpu`) every CUDA
// device is sampled under its CUDA ordinal.
#include "worker/gpu_monitor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <iostream>
#include <regex>

#include <dlfcn.h>

#include "kernels/device.h"
#include "runtime/pool/gpu_health.h"

namespace coupler::worker {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;

kernels::DeviceInfo SomeGpu() {
  kernels::DeviceInfo d;
  d.index = 0;
  d.name = "NVIDIA H100 80GB HBM3";
  d.total_memory = uint64_t{80} << 30;
  d.pci_bus_id = "00000000:3B:00.0";
  return d;
}

TEST(GpuMonitorTest, AWorkerWithoutGpusReportsNoGpus) {
  GpuMonitor monitor({});
  const Result<std::vector<wire::GpuUsage>> samples = monitor.Sample();
  ASSERT_FALSE(samples.ok());
  EXPECT_EQ(samples.status().message(), "no GPUs");
}

TEST(GpuMonitorTest, AMissingLibraryIsNamedInTheReason) {
  // A name no machine has, so the test means the same with or without a driver.
  GpuMonitor monitor({SomeGpu()}, "libnvidia-ml-absent.so.1");
  const Result<std::vector<wire::GpuUsage>> samples = monitor.Sample();
  ASSERT_FALSE(samples.ok());
  EXPECT_EQ(samples.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(samples.status().message(),
              StartsWith("no NVML: libnvidia-ml-absent.so.1: cannot open shared object file"));
}

kernels::DeviceInfo CudaGpu(int index, std::string pci_bus_id) {
  kernels::DeviceInfo d = SomeGpu();
  d.index = index;
  d.pci_bus_id = std::move(pci_bus_id);
  return d;
}

TEST(GpuMonitorTest, ASessionReadsTheDriverVersionAndTheGpuCount) {
  Result<std::unique_ptr<NvmlSession>> nvml = NvmlSession::Open(COUPLER_FAKE_NVML);
  ASSERT_TRUE(nvml.ok()) << nvml.status().ToString();
  const Result<std::string> version = (*nvml)->DriverVersion();
  ASSERT_TRUE(version.ok()) << version.status().ToString();
  EXPECT_EQ(*version, "580.65.06");
  const Result<unsigned> count = (*nvml)->DeviceCount();
  ASSERT_TRUE(count.ok()) << count.status().ToString();
  EXPECT_EQ(*count, 3u);
}

TEST(GpuMonitorTest, EachCudaDeviceIsSampledAsItsOrdinalFoundByItsPciBusId) {
  // CUDA's order differs from NVML's (the fake lists 3B before 86), as CUDA_VISIBLE_DEVICES=1,0
  // makes it; CUDA writes a 4-digit domain, NVML 8, and either case of hex.
  GpuMonitor monitor({CudaGpu(0, "0000:86:00.0"), CudaGpu(1, "0000:3b:00.0")},
                           COUPLER_FAKE_NVML);
  const Result<std::vector<wire::GpuUsage>> samples = monitor.Sample();
  ASSERT_TRUE(samples.ok()) << samples.status().ToString();
  constexpr uint64_t kGiB = uint64_t{1} << 30;
  ASSERT_EQ(samples->size(), 2u);
  auto load = [](const wire::GpuUsage& g) {
    return wire::GpuUsage{g.index, g.utilization_percent, g.used_memory, g.total_memory};
  };
  EXPECT_EQ(load((*samples)[0]), (wire::GpuUsage{0, 85, 70 * kGiB, 80 * kGiB}));
  EXPECT_EQ(load((*samples)[1]), (wire::GpuUsage{1, 37, 12 * kGiB, 80 * kGiB}));
  EXPECT_EQ(monitor.Uuid(0), "GPU-86000000-0000-0000-0000-000000000000");
  EXPECT_EQ(monitor.Uuid(1), "GPU-3b000000-0000-0000-0000-000000000000");
}

// The health readings of each GPU, and XID events as they come: the fake's hooks stand for a
// GPU heating up, a new uncorrectable ECC error and the driver's XID reports.
using SetHealth = void (*)(unsigned, unsigned, unsigned long long, unsigned long long);
using RaiseXid = void (*)(unsigned, unsigned long long);

TEST(GpuMonitorTest, HealthReadingsAndXidEventsAreSampledPerGpu) {
  void* fake = dlopen(COUPLER_FAKE_NVML, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(fake, nullptr) << dlerror();
  auto set_health = reinterpret_cast<SetHealth>(dlsym(fake, "fake_nvml_set_health"));
  auto raise_xid = reinterpret_cast<RaiseXid>(dlsym(fake, "fake_nvml_raise_xid"));
  ASSERT_NE(set_health, nullptr);
  ASSERT_NE(raise_xid, nullptr);
  set_health(0, 52, 0, 0);
  set_health(1, 67, wire::kThrottlePowerCap, 0);
  {
    GpuMonitor monitor({CudaGpu(0, "0000:3B:00.0"), CudaGpu(1, "0000:86:00.0")}, COUPLER_FAKE_NVML);
    Result<std::vector<wire::GpuUsage>> first = monitor.Sample();
    ASSERT_TRUE(first.ok()) << first.status().ToString();
    const wire::GpuUsage& a = first->at(0);
    const uint32_t all = wire::kGpuTemperature | wire::kGpuPower | wire::kGpuPowerLimit |
                         wire::kGpuThrottle | wire::kGpuEcc | wire::kGpuXid;
    EXPECT_EQ(a.readings, all);
    EXPECT_EQ(a.temperature_c, 52u);
    EXPECT_EQ(a.power_mw, 310'000u);
    EXPECT_EQ(a.power_limit_mw, 700'000u);
    EXPECT_EQ(a.throttle_reasons, 0u);
    EXPECT_EQ(a.ecc_uncorrected, 0u);
    EXPECT_EQ(a.xid_errors, 0u);
    EXPECT_EQ(first->at(1).throttle_reasons, wire::kThrottlePowerCap);

    // GPU 1 overheats and throttles, GPU 0 reports an XID a program causes (31) and then one
    // that points at the board (79), and a new uncorrectable ECC error.
    set_health(1, 91, wire::kThrottleHwThermal, 0);
    set_health(0, 55, 0, 1);
    raise_xid(0, 31);
    raise_xid(0, 79);
    Result<std::vector<wire::GpuUsage>> second = monitor.Sample();
    ASSERT_TRUE(second.ok()) << second.status().ToString();
    EXPECT_EQ(second->at(0).xid_errors, 1u) << "XID 31 is the program's, not the GPU's";
    EXPECT_EQ(second->at(0).last_xid, 79u);
    EXPECT_EQ(second->at(0).ecc_uncorrected, 1u);
    EXPECT_EQ(second->at(1).temperature_c, 91u);
    EXPECT_EQ(second->at(1).throttle_reasons, wire::kThrottleHwThermal);
    EXPECT_EQ(second->at(1).xid_errors, 0u);
    EXPECT_EQ(pool::DescribeHealth(second->at(0)),
              "55 C, 310/700 W, 1 uncorrectable ECC error, 1 XID error (last XID 79 (GPU has "
              "fallen off the bus))");
    EXPECT_EQ(pool::DescribeHealth(second->at(1)), "91 C, 655/700 W, throttled (thermal)");
    // Drained: the next sample counts nothing new.
    Result<std::vector<wire::GpuUsage>> third = monitor.Sample();
    ASSERT_TRUE(third.ok());
    EXPECT_EQ(third->at(0).xid_errors, 1u);
  }
  set_health(0, 52, 0, 0);
  set_health(1, 67, wire::kThrottlePowerCap, 0);
  dlclose(fake);
}

TEST(GpuMonitorTest, ReadingsAGpuDoesNotGiveAreLeftOutNotZero) {
  // The fake's third GPU: no ECC and no XID events (its utilization is not asked here).
  Result<std::unique_ptr<NvmlSession>> nvml = NvmlSession::Open(COUPLER_FAKE_NVML);
  ASSERT_TRUE(nvml.ok()) << nvml.status().ToString();
  Result<NvmlSession::Device> mig = (*nvml)->Find(CudaGpu(2, "0000:C1:00.0"));
  ASSERT_TRUE(mig.ok()) << mig.status().ToString();
  Result<NvmlSession::EventSet> set = (*nvml)->CreateEventSet();
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  EXPECT_EQ((*nvml)->WatchXids(*mig, *set).message(), "nvmlDeviceRegisterEvents: Not Supported");
  (*nvml)->FreeEventSet(*set);
  EXPECT_EQ((*nvml)->Uuid(*mig), "GPU-c1000000-0000-0000-0000-000000000000");
}

TEST(GpuMonitorTest, ADeviceWithoutABusIdIsTakenByIndex) {
  GpuMonitor monitor({CudaGpu(1, "")}, COUPLER_FAKE_NVML);
  const Result<std::vector<wire::GpuUsage>> samples = monitor.Sample();
  ASSERT_TRUE(samples.ok()) << samples.status().ToString();
  ASSERT_EQ(samples->size(), 1u);
  EXPECT_EQ((*samples)[0].index, 1u);
  EXPECT_EQ((*samples)[0].utilization_percent, 85u);  // NVML's device 1
}

TEST(GpuMonitorTest, AGpuNvmlDoesNotKnowMeansNoSamplesAtAll) {
  GpuMonitor monitor({CudaGpu(0, "0000:3B:00.0"), CudaGpu(1, "0000:AF:00.0")},
                           COUPLER_FAKE_NVML);
  const Result<std::vector<wire::GpuUsage>> samples = monitor.Sample();
  ASSERT_FALSE(samples.ok());
  EXPECT_EQ(samples.status().message(),
            "NVML has no device for CUDA GPU 1: "
            "nvmlDeviceGetHandleByPciBusId_v2(0000:AF:00.0): Not Found");
}

TEST(GpuMonitorTest, AGpuWithoutUtilizationReadingsGivesTheNvmlErrorNotZero) {
  // The fake's third GPU is in MIG mode.
  GpuMonitor monitor({CudaGpu(0, "0000:3B:00.0"), CudaGpu(1, "0000:C1:00.0")},
                           COUPLER_FAKE_NVML);
  const Result<std::vector<wire::GpuUsage>> samples = monitor.Sample();
  ASSERT_FALSE(samples.ok());
  EXPECT_EQ(samples.status().message(), "nvmlDeviceGetUtilizationRates (GPU 1): Not Supported");
}

TEST(GpuMonitorTest, TheDriversNvmlLoadsOrSaysWhyNot) {
  Result<std::unique_ptr<NvmlSession>> nvml = NvmlSession::Open();
  if (!nvml.ok()) {
    // This machine has no driver: the library is missing, or present without a driver.
    EXPECT_THAT(nvml.status().message(), StartsWith("no NVML: "));
    EXPECT_THAT(nvml.status().message(), AnyOf(HasSubstr(kNvmlLibrary), HasSubstr("nvmlInit_v2")));
    return;
  }
  const Result<std::string> version = (*nvml)->DriverVersion();
  ASSERT_TRUE(version.ok()) << version.status().ToString();
  EXPECT_THAT(*version, ::testing::MatchesRegex("[0-9]+\\.[0-9.]+"));
  EXPECT_TRUE((*nvml)->DeviceCount().ok());
}

TEST(GpuMonitorOnDevice, SamplesEachCudaDeviceUnderItsOrdinal) {
  if (!kernels::HaveCudaDevice()) GTEST_SKIP() << "no CUDA device";
  const Result<std::vector<kernels::DeviceInfo>> devices = kernels::ListCudaDevices();
  ASSERT_TRUE(devices.ok()) << devices.status().ToString();
  ASSERT_FALSE(devices->empty());
  for (const kernels::DeviceInfo& d : *devices) {
    // What NVML is asked for: "domain:bus:device.function", as CUDA writes it.
    const std::regex bus_id("[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\\.[0-7]");
    EXPECT_TRUE(std::regex_match(d.pci_bus_id, bus_id))
        << "GPU " << d.index << ": '" << d.pci_bus_id << "'";
  }
  GpuMonitor monitor(*devices);
  const auto start = std::chrono::steady_clock::now();
  const Result<std::vector<wire::GpuUsage>> samples = monitor.Sample();
  // For the record, not a gate: what sampling adds to each heartbeat.
  std::cout << "one Sample() of " << devices->size() << " GPU(s): "
            << std::chrono::duration_cast<std::chrono::microseconds>(
                   std::chrono::steady_clock::now() - start)
                   .count()
            << " us\n";
  if (!samples.ok() && (samples.status().message().find("Not Supported") != std::string::npos ||
                        samples.status().message().find("cannot open shared object file") !=
                            std::string::npos)) {
    // NVML reads no utilization for some GPUs (MIG instances), or the driver's utilities are
    // not installed here (a container without them): nothing to check. Any other failure is
    // this code's.
    GTEST_SKIP() << samples.status().message();
  }
  ASSERT_TRUE(samples.ok()) << samples.status().ToString();
  ASSERT_EQ(samples->size(), devices->size());
  for (size_t i = 0; i < samples->size(); ++i) {
    const wire::GpuUsage& g = (*samples)[i];
    const kernels::DeviceInfo& d = (*devices)[i];
    EXPECT_EQ(g.index, static_cast<uint32_t>(d.index));
    EXPECT_LE(g.utilization_percent, 100u);
    // The same device: NVML's total counts memory CUDA keeps for itself, within a few percent.
    EXPECT_GE(g.total_memory, d.total_memory * 9 / 10) << "GPU " << d.index;
    EXPECT_LE(g.total_memory, d.total_memory / 10 * 11) << "GPU " << d.index;
    // Listing the devices made a CUDA context on each, which holds device memory.
    EXPECT_GT(g.used_memory, 0u) << "GPU " << d.index;
    EXPECT_LE(g.used_memory, g.total_memory) << "GPU " << d.index;
    // Health: a data-center GPU reports its temperature, power and limit, throttle reasons and
    // takes XID events; its board id is NVML's "GPU-..." UUID.
    std::cout << "GPU " << d.index << ": " << pool::DescribeHealth(g) << ", readings " << g.readings
              << ", " << monitor.Uuid(g.index) << "\n";
    EXPECT_TRUE(g.has(wire::kGpuTemperature)) << "GPU " << d.index;
    EXPECT_GT(g.temperature_c, 0u);
    EXPECT_LT(g.temperature_c, 120u);
    if (g.has(wire::kGpuPower) && g.has(wire::kGpuPowerLimit)) {
      EXPECT_GT(g.power_limit_mw, 0u);
      EXPECT_LE(g.power_mw, g.power_limit_mw / 10 * 12) << "GPU " << d.index;
    }
    EXPECT_TRUE(g.has(wire::kGpuThrottle)) << "GPU " << d.index;
    EXPECT_TRUE(g.has(wire::kGpuXid)) << "GPU " << d.index;
    EXPECT_EQ(monitor.Uuid(g.index).rfind("GPU-", 0), 0u) << monitor.Uuid(g.index);
  }
}

}  // namespace
}  // namespace coupler::worker
