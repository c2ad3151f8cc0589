// A Communicator that takes buffers in a TrainBackend's memory and runs another Communicator
// (MPI: Debian's Open MPI is not CUDA-aware) on host copies of them. The fallback for GPU
// training in a build without NCCL: correct, but every collective crosses PCIe twice. Its
// memory_space() is the backend's (device for a GPU backend).
#pragma once

#include <cstddef>
#include <vector>

#include "train/comm/communicator.h"
#include "train/backend/train_backend.h"

namespace coupler::train {

class HostStagedCommunicator final : public comm::Communicator {
 public:
  // Both borrowed; they must outlive this object. inner takes host memory.
  HostStagedCommunicator(comm::Communicator& inner, TrainBackend& backend);

  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  Status AllReduce(const void* send, void* recv, size_t count, ElementType type,
                   comm::ReduceOp op) override;
  Status Broadcast(void* buf, size_t count, ElementType type, int root) override;
  Status Barrier() override { return inner_.Barrier(); }

 private:
  comm::Communicator& inner_;
  TrainBackend& backend_;
  std::vector<std::byte> host_;
};

}  // namespace coupler::train
