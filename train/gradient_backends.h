// Which communicator reduces a rank's gradients: an ordered list of backends, each saying whether
// it can serve this rank and how to create it; the first usable one wins (Horovod's habit, CPU
// last). NCCL where it is built in and the rank drives a GPU; host staging over MPI on a GPU
// without NCCL; MPI itself on the CPU.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <span>
#include <string_view>

#include "runtime/status.h"
#include "train/backend/train_backend.h"
#include "train/comm/communicator.h"

namespace coupler::train {

// What the backends look at to decide, and what they create from.
struct GradientRank {
  comm::Communicator& host;  // MPI over the whole group, host memory; borrowed
  // Where the model lives when this rank trains on a GPU (borrowed); null on the CPU.
  TrainBackend* gpu = nullptr;
  int gpu_device = -1;          // the CUDA device `gpu` drives
  bool nccl_available = false;  // NCCL is built in and a CUDA device is visible
  std::chrono::milliseconds timeout{comm::kDefaultCollectiveTimeout};
};

struct GradientBackend {
  std::string_view name;  // what the report records as its communicator
  std::string_view what;  // for errors: "cannot create <what>"
  std::function<bool(const GradientRank&)> usable;
  // A new communicator, or null for "reduce over rank.host itself". Collective: every rank of
  // the group chooses alike (they see the same build and devices) and calls it.
  std::function<Result<std::unique_ptr<comm::Communicator>>(const GradientRank&)> create;
};

// NCCL, host-staged MPI, MPI: in order of preference, MPI always usable.
std::span<const GradientBackend> GradientBackends();

// The first backend of `backends` usable for `rank`; null when none is.
const GradientBackend* FirstUsableGradientBackend(std::span<const GradientBackend> backends,
                                                  const GradientRank& rank);

struct GradientCommunicator {
  std::unique_ptr<comm::Communicator> owned;  // null when the gradients use rank.host
  comm::Communicator* communicator = nullptr;  // owned, or rank.host
};

// backend.create's communicator, or rank.host. A creation error is the caller's to report
// ("cannot create <what>"): it is not passed over to the next backend, since every rank must end
// up with the same one.
Result<GradientCommunicator> CreateGradientCommunicator(const GradientBackend& backend,
                                                        const GradientRank& rank);

}  // namespace coupler::train
