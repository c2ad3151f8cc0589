// Turns an MPI return code into a Status naming the call and MPI's own message. Internal to the
// MPI backend's .cc files (it includes mpi.h).
#pragma once

#include "train/comm/mpi_include.h"

#include <string>

#include "runtime/status.h"

namespace coupler::comm::internal {

inline Status MpiStatus(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return Status::Ok();
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(rc, text, &length) != MPI_SUCCESS) length = 0;
  return Internal(std::string(call) + " failed: " +
                  (length > 0 ? std::string(text, static_cast<size_t>(length))
                              : "MPI error code " + std::to_string(rc)));
}

}  // namespace coupler::comm::internal

#define COUPLER_MPI_RETURN_IF_ERROR(call) \
  COUPLER_RETURN_IF_ERROR(::coupler::comm::internal::MpiStatus((call), #call))
