#include "coordinator/retention_sweeper.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "coordinator/store/reuse_store.h"
#include "coordinator/store/state_store.h"
#include "runtime/logging.h"

namespace coupler::coordinator {
namespace {

int64_t WallClockNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The first sweep waits this long after the start: resuming jobs and reconnecting workers
// come first.
constexpr std::chrono::seconds kFirstSweepAfter{5};

}  // namespace

RetentionSweeper::RetentionSweeper(SweepOptions options, RunDirClaims& claims)
    : options_(std::move(options)), claims_(claims), thread_([this] { Loop(); }) {}

RetentionSweeper::~RetentionSweeper() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void RetentionSweeper::Loop() {
  std::chrono::milliseconds wait = std::min<std::chrono::milliseconds>(
      kFirstSweepAfter, std::chrono::milliseconds(options_.every_ms));
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (cv_.wait_for(lock, wait, [this] { return stopping_; })) return;
    }
    wait = std::chrono::milliseconds(options_.every_ms);
    Result<SweepReport> report = SweepOnce();
    if (!report.ok()) {
      Logger("coordinator")->warn("retention: nothing removed this time: {}",
                                  report.status().message());
    } else if (report->removed > 0) {
      Logger("coordinator")->info("retention: removed {} run director{} ({} MiB) of finished jobs "
                                  "past the retention, kept {}", report->removed,
                                  report->removed == 1 ? "y" : "ies", report->bytes >> 20,
                                  report->kept);
    }
  }
}

Result<SweepReport> RetentionSweeper::SweepOnce() {
  // Connections of its own: the loop's store and the intake thread's catalogue stay theirs.
  COUPLER_ASSIGN_OR_RETURN(std::unique_ptr<store::StateStore> state,
                           store::StateStore::Open(options_.state_dir, store::OpenMode::kReadOnly));
  COUPLER_ASSIGN_OR_RETURN(std::vector<store::JobRecord> jobs, state->ListJobs({}, 0));
  // Without the catalogue no run can be shown not to be reusable: nothing is removed.
  COUPLER_ASSIGN_OR_RETURN(std::unique_ptr<store::ReuseStore> reuse,
                           store::ReuseStore::Open(options_.reuse_catalog));
  const std::vector<const store::JobRecord*> candidates =
      PastRetention(jobs, WallClockNowMs(), options_.policy);
  std::vector<std::string> in_use;
  for (const store::JobRecord& r : jobs) {
    if (std::find(candidates.begin(), candidates.end(), &r) == candidates.end() &&
        !r.run_dir.empty()) {
      in_use.push_back(r.run_dir);
    }
  }
  SweepReport report;
  report.candidates = candidates.size();
  for (const store::JobRecord* r : candidates) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) break;
    }
    if (!claims_.BeginRemoval(r->id)) {
      ++report.kept;  // a retry holds it: it runs again, in that directory
      continue;
    }
    // The row again, now that no retry can begin: a retry that ended since the listing made
    // the job unfinished (or finished it anew, later), and then it is not a candidate.
    Result<std::optional<store::JobRecord>> now = state->LoadJob(r->id);
    if (!now.ok() || !now->has_value() || (*now)->state != r->state ||
        (*now)->finished_ms != r->finished_ms) {
      claims_.EndRemoval(r->id, false);
      continue;
    }
    const std::vector<GcEntry> done = RemoveRunDirs(
        {r}, in_use, [&](const std::string& dir) { return reuse->Records(dir); }, false, {});
    const bool removed = !done.empty() && done.front().kept.empty();
    const bool gone = removed || (!done.empty() && done.front().kept == "gone already");
    claims_.EndRemoval(r->id, gone);
    if (removed) {
      ++report.removed;
      report.bytes += done.front().bytes;
      Logger("coordinator")->info("retention: removed job {}'s run directory {}", r->id, r->run_dir);
    } else if (!done.empty() && done.front().kept != "gone already") {
      ++report.kept;
      // Once per job and start: a kept run is looked at again every sweep.
      if (told_kept_.insert(r->id).second) {
        Logger("coordinator")->info("retention: kept job {}'s run directory {}: {}", r->id,
                                    r->run_dir, done.front().kept);
      }
    }
  }
  return report;
}

}  // namespace coupler::coordinator
