// An in-memory group: N ranks as threads of one process meet at a shared rendezvous. The fake
// backend behind the Communicator tests (gloo's habit), so most collective tests need no mpirun.
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include "train/comm/communicator.h"

namespace coupler::comm {

namespace internal {
class Rendezvous;
}  // namespace internal

class InProcessCommunicator final : public Communicator {
 public:
  InProcessCommunicator(std::shared_ptr<internal::Rendezvous> rendezvous, int rank,
                        std::chrono::milliseconds timeout);
  ~InProcessCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override;

  Status AllReduce(const void* send, void* recv, size_t count, ElementType type,
                   ReduceOp op) override;
  Status Broadcast(void* buf, size_t count, ElementType type, int root) override;
  Status Barrier() override;

 private:
  std::shared_ptr<internal::Rendezvous> rendezvous_;
  int rank_;
};

// Owns the N communicators of one group; communicator(r) is meant for the thread playing rank r
// and each is used by one thread at a time. The group must outlive every call on them.
class InProcessGroup {
 public:
  explicit InProcessGroup(int size,
                          std::chrono::milliseconds timeout = kDefaultCollectiveTimeout);

  int size() const { return static_cast<int>(communicators_.size()); }
  InProcessCommunicator& communicator(int rank) { return *communicators_.at(rank); }

 private:
  std::vector<std::unique_ptr<InProcessCommunicator>> communicators_;
};

}  // namespace coupler::comm
