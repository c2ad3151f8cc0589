#include "runtime/job/workdir_marker.h"

#include <filesystem>
#include <fstream>
#include <span>
#include <sstream>

#include "runtime/io/atomic_file.h"

namespace coupler::job {

namespace fs = std::filesystem;

std::string WorkdirMarkerPath(const std::string& workdir, const std::string& job_id) {
  return (fs::path(workdir) / (".coupler-job-" + job_id)).string();
}

Status WriteWorkdirMarker(const std::string& workdir, const std::string& job_id,
                          const std::string& token) {
  std::error_code ec;
  fs::create_directories(workdir, ec);
  if (ec) {
    return InvalidArgument("workdir " + workdir + ": cannot create it: " + ec.message() +
                           " (the coordinator must see the job's workdir on the shared filesystem)");
  }
  const std::string text = token + "\n";
  const std::span<const std::byte> parts[] = {std::as_bytes(std::span(text))};
  // Not synced: it must be visible, not survive a crash (a restarted coordinator writes it
  // again), and a sync per submitted job would cost every submit a disk flush.
  Status s = io::WriteFileAtomic(WorkdirMarkerPath(workdir, job_id), parts, /*durable=*/false);
  if (!s.ok()) return s.WithContext("writing the workdir marker");
  return Status::Ok();
}

Status CheckWorkdirMarker(const std::string& workdir, const std::string& job_id,
                          const std::string& token, const std::string& host_address) {
  const std::string path = WorkdirMarkerPath(workdir, job_id);
  std::ifstream in(path);
  std::string seen;
  if (in) std::getline(in, seen);
  if (in && seen == token) return Status::Ok();
  const std::string why = !in ? "no " + path : path + " holds another job's token";
  return Unavailable("workdir " + workdir + " not visible on host " + host_address +
                     ": coupler needs a shared filesystem (" + why + ")");
}

}  // namespace coupler::job
