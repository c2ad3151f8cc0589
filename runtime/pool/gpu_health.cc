#include "runtime/pool/gpu_health.h"

#include <fmt/format.h>

namespace coupler::pool {

bool XidMeansFaultyGpu(uint32_t xid) {
  switch (xid) {
    case 13: case 31: case 43: case 45: case 68: return false;
    default: return true;
  }
}

std::string DescribeXid(uint32_t xid) {
  const char* what = nullptr;
  switch (xid) {
    case 13: what = "graphics engine exception"; break;
    case 31: what = "GPU memory page fault"; break;
    case 43: what = "GPU stopped processing"; break;
    case 45: what = "preemptive cleanup"; break;
    case 48: what = "double-bit ECC error"; break;
    case 61: case 62: what = "internal micro-controller halt"; break;
    case 63: case 64: what = "ECC page retirement or row remapping"; break;
    case 68: what = "video processor exception"; break;
    case 74: what = "NVLink error"; break;
    case 79: what = "GPU has fallen off the bus"; break;
    case 92: what = "high single-bit ECC error rate"; break;
    case 94: what = "contained ECC error"; break;
    case 95: what = "uncontained ECC error"; break;
    case 119: case 120: what = "GSP error"; break;
    default: break;
  }
  std::string out = "XID " + std::to_string(xid);
  if (what != nullptr) out += std::string(" (") + what + ")";
  return out;
}

std::string DescribeThrottle(uint64_t reasons) {
  std::string why;
  auto add = [&](const char* word) { why += (why.empty() ? "" : ", ") + std::string(word); };
  if ((reasons & wire::kThrottleThermal) != 0) add("thermal");
  if ((reasons & wire::kThrottlePowerCap) != 0) add("power");
  return why.empty() ? "" : "throttled (" + why + ")";
}

std::string DescribeHealth(const wire::GpuUsage& g) {
  std::string out;
  auto add = [&](const std::string& part) {
    if (!part.empty()) out += (out.empty() ? "" : ", ") + part;
  };
  if (g.has(wire::kGpuTemperature)) add(fmt::format("{} C", g.temperature_c));
  if (g.has(wire::kGpuPower)) {
    add(g.has(wire::kGpuPowerLimit)
            ? fmt::format("{}/{} W", g.power_mw / 1000, g.power_limit_mw / 1000)
            : fmt::format("{} W", g.power_mw / 1000));
  }
  if (g.has(wire::kGpuThrottle)) add(DescribeThrottle(g.throttle_reasons));
  if (g.has(wire::kGpuEcc) && g.ecc_uncorrected > 0) {
    add(fmt::format("{} uncorrectable ECC error{}", g.ecc_uncorrected,
                    g.ecc_uncorrected == 1 ? "" : "s"));
  }
  if (g.has(wire::kGpuXid) && g.last_xid != 0) {
    add(fmt::format("{} XID error{} (last {})", g.xid_errors, g.xid_errors == 1 ? "" : "s",
                    DescribeXid(g.last_xid)));
  }
  return out;
}

}  // namespace coupler::pool
