// What a GPU's health readings (wire::GpuUsage, sampled through NVML) mean, in one place for
// the worker, the coordinator and the CLI. An XID (the driver's numbered error report for a
// GPU, delivered through NVML's critical XID events) says something about the GPU. Most point at the board or its driver and mean work sent
// there may die or compute wrong results; a few are what a faulty program causes (an illegal
// address, a hung kernel), and fencing a healthy GPU for them would let one bad job take GPUs
// out of the pool. Classified by NVIDIA's XID catalogue; shared by the worker (which counts the
// faulty-GPU ones) and the coordinator (which says what the last one was).
#pragma once

#include <cstdint>
#include <string>

#include "runtime/wire/worker_messages.h"

namespace coupler::pool {

// True unless the XID is one a program causes on a healthy GPU: 13 (graphics engine
// exception), 31 (GPU memory page fault), 43 (GPU stopped processing), 45 (preemptive cleanup,
// after another error or a killed program), 68 (video processor exception).
bool XidMeansFaultyGpu(uint32_t xid);

// "XID 79 (GPU has fallen off the bus)"; "XID 150" for a code not described here.
std::string DescribeXid(uint32_t xid);

// "throttled (thermal, power)", or "" when NVML's reason bits slow nothing.
std::string DescribeThrottle(uint64_t reasons);

// The readings present, for people: "71 C, 612/700 W, throttled (power), 2 uncorrectable ECC
// errors, 1 XID error (last XID 79 (...))"; "" when none was read.
std::string DescribeHealth(const wire::GpuUsage& g);

}  // namespace coupler::pool
