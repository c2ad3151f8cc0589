#include "train/comm/mpi_session.h"

#include <cstdlib>
#include <utility>

#include "train/comm/mpi_error.h"

namespace coupler::comm {

Result<MpiSession> MpiSession::Start(int* argc, char*** argv) {
  int initialized = 0;
  COUPLER_MPI_RETURN_IF_ERROR(MPI_Initialized(&initialized));
  bool owns = false;
  if (!initialized) {
    // Open MPI spins while a rank waits in a collective. Where the rank shares its core (a
    // loaded node, a process beside it) the spinning rank starves the very peer it waits for:
    // two ranks fell to 0.4-0.6x of one when another process took a core. Yielding when idle
    // costs a little latency and keeps a loaded machine moving. An operator's own setting
    // (environment, or mpirun --mca, which reaches the ranks as this variable) wins.
    ::setenv("OMPI_MCA_mpi_yield_when_idle", "1", /*overwrite=*/0);
    int provided = 0;
    COUPLER_MPI_RETURN_IF_ERROR(MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided));
    owns = true;
  }
  // From here on errors come back as codes instead of aborting the job.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0;
  int size = 1;
  Status status = internal::MpiStatus(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank");
  if (status.ok()) status = internal::MpiStatus(MPI_Comm_size(MPI_COMM_WORLD, &size), "MPI_Comm_size");
  if (!status.ok()) {
    if (owns) MPI_Finalize();
    return status;
  }
  return MpiSession(owns, rank, size);
}

MpiSession::MpiSession(MpiSession&& other) noexcept
    : owns_(std::exchange(other.owns_, false)),
      world_rank_(other.world_rank_),
      world_size_(other.world_size_) {}

MpiSession& MpiSession::operator=(MpiSession&& other) noexcept {
  if (this != &other) {
    Finalize();
    owns_ = std::exchange(other.owns_, false);
    world_rank_ = other.world_rank_;
    world_size_ = other.world_size_;
  }
  return *this;
}

MpiSession::~MpiSession() noexcept { Finalize(); }

void MpiSession::AbortJob(int exit_code) noexcept {
  MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::_Exit(exit_code);  // MPI_Abort does not return in practice; be sure
}

std::string MpiSession::LibraryVersion() {
  char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  if (MPI_Get_library_version(version, &length) != MPI_SUCCESS) return "unknown";
  std::string line(version, static_cast<size_t>(length));
  const size_t end = line.find_first_of(",\n");  // "Open MPI v4.1.4, package: ..." -> first part
  return line.substr(0, end);
}

void MpiSession::Finalize() noexcept {
  if (!owns_) return;
  owns_ = false;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

}  // namespace coupler::comm
