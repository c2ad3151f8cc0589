// A graceful stop on SIGINT, SIGTERM or SIGUSR1: the handler only raises a flag, which the
// trainer reads at each step and agrees on with the other ranks, so the group stops at one step
// boundary with a checkpoint instead of dying mid-step. A second signal ends the process as the
// signal would (the handler restores the default action after the first).
#pragma once

#include <atomic>

namespace coupler::train {

// Installs the handlers for its lifetime (one at a time per process) and restores the previous
// ones on destruction. Move-less: it owns process-wide state.
class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // Raised by the first signal; borrowed by TrainerOptions::stop_requested.
  const std::atomic<bool>& requested() const;
  // The signal that raised it (0 while none has).
  int signal_number() const;
};

}  // namespace coupler::train
