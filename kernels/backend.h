// Which implementation runs a batch kernel. Every kernel has a CPU twin, so kCpu always works;
// kCuda is chosen only when this build has CUDA and a device is visible (CPU last).
#pragma once

#include <string_view>

namespace coupler::kernels {

enum class Backend { kCpu, kCuda };

// "cpu" or "cuda": what task results and logs record as the device a kernel ran on.
std::string_view BackendName(Backend backend);

// kCuda when HaveCudaDevice(), else kCpu.
Backend PickBackend();

}  // namespace coupler::kernels
