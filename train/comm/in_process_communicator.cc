#include "train/comm/in_process_communicator.h"

#include <utility>

#include "runtime/check.h"
#include "train/comm/rendezvous.h"

namespace coupler::comm {

using internal::CollectiveCall;
using internal::CollectiveKind;

InProcessCommunicator::InProcessCommunicator(std::shared_ptr<internal::Rendezvous> rendezvous,
                                             int rank, std::chrono::milliseconds timeout)
    : Communicator(timeout), rendezvous_(std::move(rendezvous)), rank_(rank) {
  COUPLER_CHECK(rendezvous_ != nullptr && rank_ >= 0 && rank_ < rendezvous_->size())
      << "rank " << rank_ << " outside its group";
}

InProcessCommunicator::~InProcessCommunicator() = default;

int InProcessCommunicator::size() const { return rendezvous_->size(); }

Status InProcessCommunicator::AllReduce(const void* send, void* recv, size_t count,
                                        ElementType type, ReduceOp op) {
  COUPLER_RETURN_IF_ERROR(CheckAllReduceArgs(send, recv, count));
  CollectiveCall call;
  call.kind = CollectiveKind::kAllReduce;
  call.send = send;
  call.recv = recv;
  call.count = count;
  call.type = type;
  call.op = op;
  return rendezvous_->Run(rank_, call, timeout());
}

Status InProcessCommunicator::Broadcast(void* buf, size_t count, ElementType type, int root) {
  COUPLER_RETURN_IF_ERROR(CheckBroadcastArgs(buf, count, root));
  CollectiveCall call;
  call.kind = CollectiveKind::kBroadcast;
  call.recv = buf;
  call.count = count;
  call.type = type;
  call.root = root;
  return rendezvous_->Run(rank_, call, timeout());
}

Status InProcessCommunicator::Barrier() {
  return rendezvous_->Run(rank_, CollectiveCall{}, timeout());
}

InProcessGroup::InProcessGroup(int size, std::chrono::milliseconds timeout) {
  COUPLER_CHECK(size > 0) << "an in-process group needs at least one rank, got " << size;
  auto rendezvous = std::make_shared<internal::Rendezvous>(size);
  communicators_.reserve(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r) {
    communicators_.push_back(std::make_unique<InProcessCommunicator>(rendezvous, r, timeout));
  }
}

}  // namespace coupler::comm
