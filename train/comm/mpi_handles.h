// Move-only owners of the MPI objects the MPI backend creates: a duplicated communicator and a
// user reduction op. Both are released only while MPI is still up. Internal (includes mpi.h).
#pragma once

#include "train/comm/mpi_include.h"

#include <utility>

namespace coupler::comm::internal {

inline bool MpiIsUp() {
  int initialized = 0;
  int finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

class MpiCommHandle {
 public:
  MpiCommHandle() = default;
  explicit MpiCommHandle(MPI_Comm comm) : comm_(comm) {}
  MpiCommHandle(MpiCommHandle&& other) noexcept
      : comm_(std::exchange(other.comm_, MPI_COMM_NULL)) {}
  MpiCommHandle& operator=(MpiCommHandle&& other) noexcept {
    if (this != &other) {
      Reset();
      comm_ = std::exchange(other.comm_, MPI_COMM_NULL);
    }
    return *this;
  }
  MpiCommHandle(const MpiCommHandle&) = delete;
  MpiCommHandle& operator=(const MpiCommHandle&) = delete;
  ~MpiCommHandle() noexcept { Reset(); }

  MPI_Comm get() const { return comm_; }
  // Gives up ownership without freeing: for a communicator with a collective still pending,
  // which MPI may progress later and so must never see freed.
  MPI_Comm Release() { return std::exchange(comm_, MPI_COMM_NULL); }

 private:
  void Reset() noexcept {
    if (comm_ != MPI_COMM_NULL && MpiIsUp()) MPI_Comm_free(&comm_);
    comm_ = MPI_COMM_NULL;
  }
  MPI_Comm comm_ = MPI_COMM_NULL;
};

class MpiOpHandle {
 public:
  MpiOpHandle() = default;
  explicit MpiOpHandle(MPI_Op op) : op_(op) {}
  MpiOpHandle(MpiOpHandle&& other) noexcept : op_(std::exchange(other.op_, MPI_OP_NULL)) {}
  MpiOpHandle& operator=(MpiOpHandle&& other) noexcept {
    if (this != &other) {
      Reset();
      op_ = std::exchange(other.op_, MPI_OP_NULL);
    }
    return *this;
  }
  MpiOpHandle(const MpiOpHandle&) = delete;
  MpiOpHandle& operator=(const MpiOpHandle&) = delete;
  ~MpiOpHandle() noexcept { Reset(); }

  MPI_Op get() const { return op_; }
  MPI_Op Release() { return std::exchange(op_, MPI_OP_NULL); }

 private:
  void Reset() noexcept {
    if (op_ != MPI_OP_NULL && MpiIsUp()) MPI_Op_free(&op_);
    op_ = MPI_OP_NULL;
  }
  MPI_Op op_ = MPI_OP_NULL;
};

}  // namespace coupler::comm::internal
