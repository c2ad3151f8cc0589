// Communicator: the narrow collective interface the tight path trains over (MPI, NCCL, or the
// in-process fake for tests). No MPI or NCCL header here, so callers build without either.
#pragma once

#include <chrono>
#include <cstddef>
#include <string_view>

#include "runtime/precision/element_type.h"
#include "runtime/status.h"

namespace coupler::comm {

enum class ReduceOp { kSum, kMax, kMin };

std::string_view ReduceOpName(ReduceOp op);

// Where a communicator's buffers live: ordinary host memory (MPI, the in-process group) or the
// memory of the GPU this rank drives (NCCL, host staging of a GPU backend's buffers). A pointer
// does not say which it is, so the communicator does: callers check it before handing one over.
enum class MemorySpace { kHost, kDevice };
std::string_view MemorySpaceName(MemorySpace space);

// Long enough for a slow first step (allocation, warm-up) yet finite: a stalled peer must end
// the group with an error, never hang it.
inline constexpr std::chrono::milliseconds kDefaultCollectiveTimeout{300'000};

// What a backend answers once an earlier failure broke it: OK while `broken` is OK, else Aborted
// naming the call and carrying the first failure, the same text from every backend.
Status CheckNotBroken(const Status& broken, std::string_view what);

// Every rank of a group calls the same collectives in the same order with the same count,
// type, op and root. fp16/bf16 travel as raw 16-bit words (runtime/precision/half.h); their
// sums accumulate in float32 and round to nearest even. A collective that cannot complete
// within timeout() returns DeadlineExceeded naming it (and the missing ranks where known);
// after that the communicator is broken and later calls return Aborted. Every buffer passed in
// lies in memory_space().
class Communicator {
 public:
  virtual ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  std::chrono::milliseconds timeout() const { return timeout_; }
  MemorySpace memory_space() const { return memory_space_; }

  // send may equal recv (in place). count is in elements.
  virtual Status AllReduce(const void* send, void* recv, size_t count, ElementType type,
                           ReduceOp op) = 0;
  virtual Status Broadcast(void* buf, size_t count, ElementType type, int root) = 0;
  virtual Status Barrier() = 0;

 protected:
  explicit Communicator(std::chrono::milliseconds timeout,
                        MemorySpace memory_space = MemorySpace::kHost)
      : timeout_(timeout), memory_space_(memory_space) {}

  // Shared argument checks, so every backend rejects the same misuse with the same text.
  Status CheckAllReduceArgs(const void* send, const void* recv, size_t count) const;
  Status CheckBroadcastArgs(const void* buf, size_t count, int root) const;

 private:
  std::chrono::milliseconds timeout_;
  MemorySpace memory_space_;
};

// InvalidArgument unless `comm` takes buffers in `expected`; `role` says what the caller wants it
// for ("the gradient communicator"), so a miswired rank fails before the first collective
// instead of handing host pointers to NCCL.
Status CheckMemorySpace(const Communicator& comm, MemorySpace expected, std::string_view role);

}  // namespace coupler::comm
