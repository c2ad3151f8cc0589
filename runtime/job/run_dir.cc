#include "runtime/job/run_dir.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "runtime/io/atomic_file.h"

namespace coupler::job {

namespace fs = std::filesystem;

Result<std::string> ClaimRunDir(const JobGraph& graph, std::string_view job_id) {
  const fs::path root = graph.workdir_root.empty() ? fs::path(graph.workdir) : fs::path(graph.workdir_root);
  std::error_code ec;
  if (!graph.run_dir.empty()) {
    const fs::path pinned = (root / graph.run_dir).lexically_normal();
    fs::create_directories(pinned, ec);
    if (ec) return Internal("cannot create the run directory " + pinned.string() + ": " + ec.message());
    return pinned.string();
  }
  const fs::path runs = (root / std::string(kRunsFolder)).lexically_normal();
  fs::create_directories(runs, ec);
  if (ec) return Internal("cannot create " + runs.string() + ": " + ec.message());
  for (int n = 1; n <= 10'000; ++n) {
    const std::string name = n == 1 ? std::string(job_id) : std::string(job_id) + "." + std::to_string(n);
    if (fs::create_directory(runs / name, ec)) return (runs / name).string();
    if (ec) return Internal("cannot create the run directory " + (runs / name).string() + ": " + ec.message());
  }
  return Internal("no free run directory for " + std::string(job_id) + " under " + runs.string());
}

Status PointLatestAt(const std::string& root, const std::string& run_dir) {
  const fs::path link = fs::path(root) / std::string(kLatestLink);
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(link, ec);
  if (!ec && fs::exists(st) && !fs::is_symlink(st)) {
    return InvalidArgument(link.string() + " is not a symlink: not replaced (remove it to get "
                           "the newest run's link there)");
  }
  fs::path target = fs::path(run_dir).lexically_relative(root);
  if (target.empty() || target.string().starts_with("..")) target = run_dir;
  if (target == ".") return Status::Ok();  // pinned to the workdir itself: nothing to point at
  const std::string tmp = io::TempPathFor(link.string());
  fs::create_symlink(target, tmp, ec);
  if (ec) return Internal("cannot create " + tmp + ": " + ec.message());
  // rename(2) replaces a symlink, never follows it: readers see the old run or the new one.
  if (std::rename(tmp.c_str(), link.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    io::RemoveQuietly(tmp);
    return Internal("cannot replace " + link.string() + ": " + why);
  }
  return Status::Ok();
}

}  // namespace coupler::job
