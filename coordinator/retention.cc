#include "coordinator/retention.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "runtime/job/job_phase.h"
#include "runtime/job/workdir_marker.h"

namespace coupler::coordinator {
namespace {

namespace fs = std::filesystem;

bool Finished(const store::JobRecord& r) {
  const std::optional<job::JobPhase> phase = job::ParseJobPhase(r.state);
  return phase && job::IsFinished(*phase) && r.finished_ms > 0;
}

// The bytes of the regular files beneath `dir`, nothing followed through a symlink.
uint64_t BytesUnder(const fs::path& dir) {
  uint64_t bytes = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec)) {
    std::error_code size_ec;
    if (it->is_regular_file(size_ec) && !it->is_symlink(size_ec)) {
      const uintmax_t n = it->file_size(size_ec);
      if (!size_ec) bytes += n;
    }
  }
  return bytes;
}

}  // namespace

std::vector<const store::JobRecord*> PastRetention(const std::vector<store::JobRecord>& newest_first,
                                                   int64_t now_ms, const RetentionPolicy& policy) {
  std::vector<const store::JobRecord*> out;
  size_t finished = 0;
  for (const store::JobRecord& r : newest_first) {
    if (!Finished(r)) continue;
    if (finished++ < policy.keep_jobs) continue;
    if (now_ms - r.finished_ms < policy.older_than_ms) continue;
    out.push_back(&r);
  }
  return out;
}

std::vector<GcEntry> RemoveRunDirs(const std::vector<const store::JobRecord*>& candidates,
                                   const std::vector<std::string>& in_use,
                                   const ReusableCheck& reusable, bool dry_run,
                                   const std::function<void(const GcEntry&)>& progress) {
  const std::set<std::string> busy(in_use.begin(), in_use.end());
  std::vector<GcEntry> out;
  for (const store::JobRecord* r : candidates) {
    GcEntry e;
    e.job_id = r->id;
    e.run_dir = r->run_dir;
    struct stat st {};
    if (e.run_dir.empty()) {
      e.kept = "its run directory is not recorded (admitted by an older coupler)";
    } else if (::lstat(e.run_dir.c_str(), &st) != 0) {
      e.kept = "gone already";
    } else if (!S_ISDIR(st.st_mode)) {
      e.kept = "not a directory (a symlink is never followed)";
    } else if (busy.count(e.run_dir) > 0) {
      e.kept = "in use by a job not past the retention (a pinned run_dir)";
    } else if (struct stat marker {};
               ::lstat(job::WorkdirMarkerPath(e.run_dir, r->id).c_str(), &marker) != 0 ||
               !S_ISREG(marker.st_mode)) {
      e.kept = "it does not hold this job's marker (" + job::WorkdirMarkerPath(e.run_dir, r->id) +
               "): not a directory coupler made for it";
    } else if (Result<bool> reuse = reusable(e.run_dir); !reuse.ok()) {
      e.kept = "cannot tell whether it is reusable: " + std::string(reuse.status().message());
    } else if (*reuse) {
      e.kept = "reusable: the reuse catalogue records its outputs";
    } else {
      e.bytes = BytesUnder(e.run_dir);
      if (!dry_run) {
        std::error_code ec;
        fs::remove_all(e.run_dir, ec);  // removes symlinks inside, never what they point to
        if (ec) e.kept = "cannot remove it: " + ec.message();
      }
    }
    if (progress) progress(e);
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace coupler::coordinator
