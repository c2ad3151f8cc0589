// Gathers `coupler doctor --coordinator EP`'s facts against the real coordinator and this
// host (cli/doctor/preflight.h judges them): a TCP connect, a worker's message over the worker
// keys this host would use (the coordinator answers an unregistered connection with
// RegisterAgain, so nothing registers and nothing runs), the shared workdir, Open MPI's ports.
#pragma once

#include <chrono>
#include <string>

#include "cli/doctor/preflight.h"

namespace coupler::cli {

struct PreflightOptions {
  std::string coordinator;  // the workers' endpoint, as `coupler worker --coordinator` takes it
  std::string keys_dir;     // --keys; empty: as a worker finds them
  bool insecure = false;
  std::string workdir;      // --workdir; empty: not checked
  std::chrono::milliseconds timeout{5000};
};

doctor::PreflightFacts ProbeCoordinator(const PreflightOptions& options);

}  // namespace coupler::cli
