// RetentionSweeper: `coupler coordinator --gc-older-than 7d` — what `coupler gc` does, done by
// the running coordinator on a thread of its own every `every_ms`: the run directories of
// finished jobs past the retention are removed (retention.h says which are kept and why), the
// jobs stay listed. It reads the state through its own read-only connection and the reuse
// catalogue through its own, so the event loop never waits on it; a job a `coupler retry` holds
// is left alone, and a retry of one being removed is refused (run_dir_claims.h).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "coordinator/retention.h"
#include "coordinator/run_dir_claims.h"

namespace coupler::coordinator {

struct SweepOptions {
  std::string state_dir;
  std::string reuse_catalog;  // the catalogue the coordinator records reusable runs in
  RetentionPolicy policy;
  int64_t every_ms = 3'600'000;
};

// What one sweep did, for its log line and for tests.
struct SweepReport {
  size_t candidates = 0;
  size_t removed = 0;
  size_t kept = 0;
  uint64_t bytes = 0;
};

class RetentionSweeper {
 public:
  // Sweeps once soon after the start, then every options.every_ms. `claims` outlives it.
  RetentionSweeper(SweepOptions options, RunDirClaims& claims);
  ~RetentionSweeper();  // stops and joins (a sweep under way finishes its current directory)
  RetentionSweeper(const RetentionSweeper&) = delete;
  RetentionSweeper& operator=(const RetentionSweeper&) = delete;

  // One sweep, on the calling thread.
  Result<SweepReport> SweepOnce();

 private:
  void Loop();

  SweepOptions options_;
  RunDirClaims& claims_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::set<std::string> told_kept_;  // jobs whose kept run was logged (the sweep thread's)
  std::thread thread_;
};

}  // namespace coupler::coordinator
