// Entry point to the NCCL backend that needs neither nccl.h nor the CUDA headers, so callers
// build the same with or without NCCL (COUPLER_WITH_NCCL is defined when it is compiled in).
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "train/comm/communicator.h"
#include "runtime/status.h"

namespace coupler::comm {

// True when NCCL is compiled in and at least one CUDA device is visible to this process. It does
// not prove a collective will work (drivers, peers): CreateNcclCommunicator says that.
bool NcclAvailable();

// The NCCL library's version, e.g. "2.27.3"; "none" when built without NCCL.
std::string NcclVersion();

// A Communicator over NCCL on CUDA device `device`, for the ranks of `bootstrap` (the MPI
// communicator; same rank and size). Collective over bootstrap: every rank calls it. Its
// AllReduce/Broadcast take DEVICE pointers (memory on `device`), unlike the MPI backend.
// Unavailable when built without NCCL or when no rank could set up its device.
Result<std::unique_ptr<Communicator>> CreateNcclCommunicator(
    Communicator& bootstrap, int device,
    std::chrono::milliseconds timeout = kDefaultCollectiveTimeout);

}  // namespace coupler::comm
