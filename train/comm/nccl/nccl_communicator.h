// NcclCommunicator: the Communicator over NCCL, for ranks that each drive one CUDA device. Its
// buffers are DEVICE memory on that device (the MPI backend takes host memory). Every collective
// runs on the communicator's own non-blocking stream and is polled against the timeout, so a
// stalled peer becomes DeadlineExceeded instead of a hang; memory_space() says kDevice. nccl.h
// stays out of this header; callers outside comm/ use train/comm/nccl_factory.h.
#pragma once

#include <chrono>
#include <memory>

#include "train/comm/communicator.h"

namespace coupler::comm {

class NcclCommunicator final : public Communicator {
 public:
  // Collective over bootstrap (the MPI communicator, borrowed only during the call): rank 0
  // creates the ncclUniqueId and broadcasts it. The communicator then makes `device` current
  // on the calling thread, owns a stream on it and joins the NCCL clique, all within timeout.
  // If any rank fails to set up its device, every rank gets an error (none is left waiting).
  static Result<std::unique_ptr<NcclCommunicator>> Create(
      Communicator& bootstrap, int device,
      std::chrono::milliseconds timeout = kDefaultCollectiveTimeout);
  // ncclCommDestroy when healthy; ncclCommAbort after a timeout or an error (Destroy could wait
  // forever on a peer that is gone).
  ~NcclCommunicator() override;

  int rank() const override;
  int size() const override;
  int device() const;

  // send/recv/buf point to device memory on device(). The caller must have finished writing
  // them (they are read on this communicator's own stream, not ordered after the caller's
  // streams: synchronize first). On return the collective has completed on the device. Any
  // NCCL or CUDA error, or a timeout, aborts the NCCL communicator: later calls return Aborted.
  Status AllReduce(const void* send, void* recv, size_t count, ElementType type,
                   ReduceOp op) override;
  Status Broadcast(void* buf, size_t count, ElementType type, int root) override;
  // A one-element all-reduce on a small device scratch buffer.
  Status Barrier() override;

 private:
  struct Impl;
  NcclCommunicator(std::unique_ptr<Impl> impl, std::chrono::milliseconds timeout);

  std::unique_ptr<Impl> impl_;
};

}  // namespace coupler::comm
