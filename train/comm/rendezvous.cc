#include "train/comm/rendezvous.h"

#include <cstring>

#include "train/comm/reduce.h"

namespace coupler::comm::internal {
namespace {

const char* KindName(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllReduce: return "AllReduce";
    case CollectiveKind::kBroadcast: return "Broadcast";
    case CollectiveKind::kBarrier: return "Barrier";
  }
  return "collective";
}

std::string Describe(const CollectiveCall& call) {
  std::string s = KindName(call.kind);
  switch (call.kind) {
    case CollectiveKind::kAllReduce:
      return s + "(count " + std::to_string(call.count) + ", " +
             std::string(ElementTypeName(call.type)) + ", " + std::string(ReduceOpName(call.op)) + ")";
    case CollectiveKind::kBroadcast:
      return s + "(count " + std::to_string(call.count) + ", " +
             std::string(ElementTypeName(call.type)) + ", root " + std::to_string(call.root) + ")";
    case CollectiveKind::kBarrier:
      return s + "()";
  }
  return s;
}

bool SameCollective(const CollectiveCall& a, const CollectiveCall& b) {
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case CollectiveKind::kAllReduce:
      return a.count == b.count && a.type == b.type && a.op == b.op;
    case CollectiveKind::kBroadcast:
      return a.count == b.count && a.type == b.type && a.root == b.root;
    case CollectiveKind::kBarrier:
      return true;
  }
  return false;
}

}  // namespace

Rendezvous::Rendezvous(int size)
    : size_(size), calls_(static_cast<size_t>(size)), present_(static_cast<size_t>(size)) {}

Status Rendezvous::Run(int rank, const CollectiveCall& call, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!broken_.ok()) {
    return Aborted(std::string(KindName(call.kind)) +
                   ": group is broken by an earlier failure: " + broken_.message());
  }
  const auto r = static_cast<size_t>(rank);
  if (present_[r]) {
    return InvalidArgument(std::string(KindName(call.kind)) + ": rank " + std::to_string(rank) +
                           " is already inside a collective (one thread per rank)");
  }
  calls_[r] = call;
  present_[r] = true;
  const uint64_t my_generation = generation_;
  if (++arrived_ == size_) {
    result_ = Execute();
    arrived_ = 0;
    present_.assign(present_.size(), false);
    ++generation_;
    cv_.notify_all();
    return result_;
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  cv_.wait_until(lock, deadline,
                 [&] { return generation_ != my_generation || !broken_.ok(); });
  if (generation_ != my_generation) return result_;
  if (!broken_.ok()) return broken_;

  std::string missing;
  int missing_count = 0;
  for (int i = 0; i < size_; ++i) {
    if (present_[static_cast<size_t>(i)]) continue;
    missing += (missing.empty() ? "" : ", ") + std::to_string(i);
    ++missing_count;
  }
  broken_ = DeadlineExceeded(std::string(KindName(call.kind)) + " did not complete within " +
                             std::to_string(timeout.count()) + " ms: " +
                             (missing_count == 1 ? "rank " : "ranks ") + missing +
                             " did not arrive (group of " + std::to_string(size_) + ")");
  cv_.notify_all();
  return broken_;
}

Status Rendezvous::Execute() {
  const CollectiveCall& first = calls_[0];
  for (int i = 1; i < size_; ++i) {
    const CollectiveCall& other = calls_[static_cast<size_t>(i)];
    if (!SameCollective(first, other)) {
      return InvalidArgument("collective mismatch: rank 0 called " + Describe(first) +
                             " but rank " + std::to_string(i) + " called " + Describe(other));
    }
  }
  const size_t bytes = first.count * ElementSize(first.type);
  switch (first.kind) {
    case CollectiveKind::kAllReduce: {
      if (first.count == 0) return Status::Ok();
      std::vector<const void*> inputs;
      inputs.reserve(calls_.size());
      for (const CollectiveCall& c : calls_) inputs.push_back(c.send);
      // Every send buffer is read to the end before any recv but rank 0's is written, so in-place
      // calls (send == recv) on any rank are safe.
      ReduceBuffers(inputs, first.recv, first.count, first.type, first.op);
      for (size_t i = 1; i < calls_.size(); ++i) {
        if (calls_[i].recv != first.recv) std::memcpy(calls_[i].recv, first.recv, bytes);
      }
      return Status::Ok();
    }
    case CollectiveKind::kBroadcast: {
      if (first.count == 0) return Status::Ok();
      const void* src = calls_[static_cast<size_t>(first.root)].recv;
      for (const CollectiveCall& c : calls_) {
        if (c.recv != src) std::memcpy(c.recv, src, bytes);
      }
      return Status::Ok();
    }
    case CollectiveKind::kBarrier:
      return Status::Ok();
  }
  return Internal("unknown collective");
}

}  // namespace coupler::comm::internal
