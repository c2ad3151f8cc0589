// MpiCommunicator: the Communicator over host buffers on a duplicate of MPI_COMM_WORLD. Every
// collective is non-blocking (MPI_Iallreduce/Ibcast/Ibarrier) and polled against the timeout,
// so a stalled peer becomes DeadlineExceeded instead of a hang. fp16/bf16 travel as 16-bit
// words reduced by a user MPI_Op (float32 accumulation per combining step, round to nearest
// even). mpi.h stays out of this header.
#pragma once

#include <chrono>
#include <memory>

#include "train/comm/communicator.h"

namespace coupler::comm {

class MpiCommunicator final : public Communicator {
 public:
  // MPI must be initialized (see MpiSession) and must outlive the communicator. Collective over
  // MPI_COMM_WORLD: every rank calls it.
  static Result<std::unique_ptr<MpiCommunicator>> Create(
      std::chrono::milliseconds timeout = kDefaultCollectiveTimeout);
  ~MpiCommunicator() override;

  int rank() const override;
  int size() const override;

  // A DeadlineExceeded leaves the collective pending inside MPI (MPI cannot cancel one): the
  // buffers may still be written and later calls return Aborted. End the job after it.
  Status AllReduce(const void* send, void* recv, size_t count, ElementType type,
                   ReduceOp op) override;
  Status Broadcast(void* buf, size_t count, ElementType type, int root) override;
  Status Barrier() override;

 private:
  struct Impl;
  MpiCommunicator(std::unique_ptr<Impl> impl, std::chrono::milliseconds timeout);

  std::unique_ptr<Impl> impl_;
};

}  // namespace coupler::comm
