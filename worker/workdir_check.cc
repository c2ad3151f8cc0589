#include "worker/workdir_check.h"

#include "runtime/job/workdir_marker.h"

namespace coupler::worker {
namespace {

// Jobs remembered; past this the oldest ids (they sort by submission) are forgotten and would
// be checked again, which costs one file read.
constexpr size_t kJobsRemembered = 1024;

}  // namespace

Status WorkdirCheck::Check(const wire::TaskSpec& spec) {
  if (spec.workdir_token.empty() || spec.workdir.empty()) return Status::Ok();
  {
    std::lock_guard lock(mu_);
    if (auto it = seen_.find(spec.job_id); it != seen_.end()) return it->second;
  }
  // Read outside the lock: a hung NFS mount stalls this task's slot, not every slot.
  Status s = job::CheckWorkdirMarker(spec.workdir, spec.job_id, spec.workdir_token, host_address_);
  std::lock_guard lock(mu_);
  if (seen_.size() >= kJobsRemembered) seen_.erase(seen_.begin());
  seen_.emplace(spec.job_id, s);
  return s;
}

}  // namespace coupler::worker
