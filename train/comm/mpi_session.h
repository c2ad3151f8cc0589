// MpiSession: RAII for MPI itself. Initializes MPI (MPI_Init_thread) unless something else
// already did, and finalizes it on destruction only if it was the one that initialized it.
#pragma once

#include <string>

#include "runtime/status.h"

namespace coupler::comm {

class MpiSession {
 public:
  // argc/argv may be null. Asks for MPI_THREAD_SERIALIZED: collectives are issued from one
  // thread at a time, not necessarily the main one.
  static Result<MpiSession> Start(int* argc = nullptr, char*** argv = nullptr);

  MpiSession(MpiSession&& other) noexcept;
  MpiSession& operator=(MpiSession&& other) noexcept;
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  ~MpiSession() noexcept;

  bool owns_mpi() const { return owns_; }

  // Ends every rank of the job now (MPI_Abort on MPI_COMM_WORLD). For a rank that failed while
  // collectives may still be pending: MPI_Finalize could wait on them forever.
  [[noreturn]] static void AbortJob(int exit_code) noexcept;

  // The MPI library's own version line (MPI_Get_library_version; callable before MPI_Init).
  static std::string LibraryVersion();
  int world_rank() const { return world_rank_; }
  int world_size() const { return world_size_; }

 private:
  MpiSession(bool owns, int world_rank, int world_size)
      : owns_(owns), world_rank_(world_rank), world_size_(world_size) {}
  void Finalize() noexcept;

  bool owns_ = false;  // this object called MPI_Init_thread and must call MPI_Finalize
  int world_rank_ = 0;
  int world_size_ = 1;
};

}  // namespace coupler::comm
