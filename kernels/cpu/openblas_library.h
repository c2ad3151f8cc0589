// OpenBLAS, opened on the first CPU GEMM instead of linked. Linked, its constructor starts a
// thread per core that spins on sched_yield for its first ~0.1 s, in every coupler process: on
// two cores, a coordinator and two workers starting together lost a core to it for their first
// tasks (a third of a derive task's samples were that thread, measured here), though only
// training GEMMs use BLAS, and those with one thread (a rank or a slot per core).
#pragma once

#include <cblas.h>

#include "runtime/status.h"

namespace coupler::kernels {

struct OpenBlasApi {
  decltype(&cblas_sgemm) sgemm = nullptr;
};

// The process's OpenBLAS (libopenblas.so.0), loaded once (thread-safe) and set to one thread.
// Unavailable, with the loader's reason, when it cannot be opened.
Result<const OpenBlasApi*> OpenBlas();

}  // namespace coupler::kernels
