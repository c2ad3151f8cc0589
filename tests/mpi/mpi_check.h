// The MPI test programs' checks: every rank counts its checks and failures and prints each
// failure with its rank; main() all-reduces the totals and exits non-zero on any failure.
#pragma once

#include <cstdio>
#include <string>

#include "runtime/status.h"

namespace coupler::mpitest {

inline int g_failures = 0;
inline int g_checks = 0;

inline void Check(bool ok, int rank, const std::string& what) {
  ++g_checks;
  if (ok) return;
  ++g_failures;
  std::fprintf(stderr, "rank %d: FAILED %s\n", rank, what.c_str());
}

inline void CheckOk(const Status& s, int rank, const std::string& what) {
  Check(s.ok(), rank, what + ": " + s.ToString());
}

}  // namespace coupler::mpitest
