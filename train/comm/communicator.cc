#include "train/comm/communicator.h"

#include <string>

namespace coupler::comm {

Communicator::~Communicator() = default;

std::string_view ReduceOpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return "sum";
    case ReduceOp::kMax: return "max";
    case ReduceOp::kMin: return "min";
  }
  return "unknown";
}

std::string_view MemorySpaceName(MemorySpace space) {
  switch (space) {
    case MemorySpace::kHost: return "host";
    case MemorySpace::kDevice: return "device";
  }
  return "unknown";
}

Status CheckMemorySpace(const Communicator& comm, MemorySpace expected, std::string_view role) {
  if (comm.memory_space() == expected) return Status::Ok();
  return InvalidArgument(std::string(role) + " must take " + std::string(MemorySpaceName(expected)) +
                         " memory, but this one takes " +
                         std::string(MemorySpaceName(comm.memory_space())) + " memory");
}

Status Communicator::CheckAllReduceArgs(const void* send, const void* recv, size_t count) const {
  if (count > 0 && (send == nullptr || recv == nullptr)) {
    return InvalidArgument("AllReduce: null buffer with count " + std::to_string(count));
  }
  return Status::Ok();
}

Status Communicator::CheckBroadcastArgs(const void* buf, size_t count, int root) const {
  if (count > 0 && buf == nullptr) {
    return InvalidArgument("Broadcast: null buffer with count " + std::to_string(count));
  }
  if (root < 0 || root >= size()) {
    return InvalidArgument("Broadcast: root " + std::to_string(root) + " is not a rank of a group of " +
                           std::to_string(size()));
  }
  return Status::Ok();
}

Status CheckNotBroken(const Status& broken, std::string_view what) {
  if (broken.ok()) return Status::Ok();
  return Aborted(std::string(what) + ": communicator is broken by an earlier failure: " +
                 broken.ToString());
}

}  // namespace coupler::comm
