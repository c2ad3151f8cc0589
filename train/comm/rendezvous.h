// The meeting point of an InProcessGroup: each collective is one generation; the last rank to
// arrive checks that all ranks called the same thing, does the work for everyone, and wakes
// the rest. Internal to in_process_communicator.cc and its tests.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "train/comm/communicator.h"

namespace coupler::comm::internal {

enum class CollectiveKind { kAllReduce, kBroadcast, kBarrier };

struct CollectiveCall {
  CollectiveKind kind = CollectiveKind::kBarrier;
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;
  ElementType type = ElementType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  int root = 0;
};

class Rendezvous {
 public:
  explicit Rendezvous(int size);

  int size() const { return size_; }

  // Blocks until every rank has made its call and the work is done, or until timeout.
  Status Run(int rank, const CollectiveCall& call, std::chrono::milliseconds timeout);

 private:
  Status Execute();  // by the last arriver, under mu_

  const int size_;
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t generation_ = 0;      // completed collectives
  int arrived_ = 0;              // ranks waiting in the current generation
  std::vector<CollectiveCall> calls_;
  std::vector<bool> present_;
  Status result_;                // of the last completed generation
  Status broken_;                // set once a collective timed out: the group is done
};

}  // namespace coupler::comm::internal
