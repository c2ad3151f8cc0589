// `coupler gc --state DIR --older-than 7d [--keep-jobs N] [--dry-run]`: removes the run
// directories (outputs, task logs, checkpoints, step histories) of finished jobs past the
// retention, keeping their rows: status still lists them. It takes the state's lock, so it runs
// while no coordinator does (a coordinator holding the state is named in the refusal). What is
// kept and why: coordinator/retention.h.
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.h"
#include "coordinator/retention.h"
#include "coordinator/store/reuse_store.h"
#include "coordinator/store/state_store.h"
#include "runtime/job/job_phase.h"
#include "runtime/util/duration.h"

namespace coupler::cli {
namespace {

struct GcArgs {
  std::string state_dir;
  std::string older_than;
  size_t keep_jobs = 0;
  bool dry_run = false;
  std::string reuse_catalog;
};

std::string Bytes(uint64_t b) {
  if (b >= (uint64_t{1} << 30)) return fmt::format("{:.1f} GiB", b / double(uint64_t{1} << 30));
  if (b >= (uint64_t{1} << 20)) return fmt::format("{:.1f} MiB", b / double(uint64_t{1} << 20));
  return fmt::format("{} KiB", (b + 1023) / 1024);
}

int RunGc(const GcArgs& args) {
  Result<int64_t> older = util::ParseDuration(args.older_than, "--older-than");
  if (!older.ok()) {
    std::fprintf(stderr, "coupler gc: %s\n", std::string(older.status().message()).c_str());
    return kExitBadInput;
  }
  // Read-write: the lock says whether a coordinator holds the state.
  Result<std::unique_ptr<store::StateStore>> state =
      store::StateStore::Open(args.state_dir, store::OpenMode::kReadWrite);
  if (!state.ok()) {
    std::fprintf(stderr, "coupler gc: %s\n", std::string(state.status().message()).c_str());
    return kExitFailure;
  }
  Result<std::vector<store::JobRecord>> jobs = (*state)->ListJobs({}, 0);
  if (!jobs.ok()) {
    std::fprintf(stderr, "coupler gc: %s\n", std::string(jobs.status().message()).c_str());
    return kExitFailure;
  }
  const std::string catalog = args.reuse_catalog.empty()
                                  ? args.state_dir + "/" + store::ReuseStore::kFileName
                                  : args.reuse_catalog;
  Result<std::unique_ptr<store::ReuseStore>> reuse = store::ReuseStore::Open(catalog);
  if (!reuse.ok()) {
    std::fprintf(stderr, "coupler gc: cannot read the reuse catalogue, so nothing is removed: %s\n",
                 std::string(reuse.status().message()).c_str());
    return kExitFailure;
  }
  const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  const std::vector<const store::JobRecord*> candidates =
      coordinator::PastRetention(*jobs, now, {*older, args.keep_jobs});
  std::vector<std::string> in_use;
  for (const store::JobRecord& r : *jobs) {
    if (std::find(candidates.begin(), candidates.end(), &r) == candidates.end() && !r.run_dir.empty()) {
      in_use.push_back(r.run_dir);
    }
  }
  uint64_t removed = 0, bytes = 0, kept = 0;
  auto progress = [&](const coordinator::GcEntry& e) {
    if (e.kept.empty()) {
      ++removed;
      bytes += e.bytes;
      std::printf("%s %s %s (%s)\n", args.dry_run ? "would remove" : "removed", e.job_id.c_str(),
                  e.run_dir.c_str(), Bytes(e.bytes).c_str());
    } else if (e.kept != "gone already") {
      ++kept;
      std::printf("kept %s %s: %s\n", e.job_id.c_str(), e.run_dir.c_str(), e.kept.c_str());
    }
    std::fflush(stdout);
  };
  (void)coordinator::RemoveRunDirs(
      candidates, in_use, [&](const std::string& dir) { return (*reuse)->Records(dir); },
      args.dry_run, progress);
  std::printf("%s %llu run director%s (%s) of %zu finished job(s) past the retention; kept %llu\n",
              args.dry_run ? "would remove" : "removed", static_cast<unsigned long long>(removed),
              removed == 1 ? "y" : "ies", Bytes(bytes).c_str(), candidates.size(),
              static_cast<unsigned long long>(kept));
  return kExitOk;
}

}  // namespace

void AddGcCommand(CLI::App& app, CommandBody* run) {
  auto args = std::make_shared<GcArgs>();
  CLI::App* c = app.add_subcommand(
      "gc", "Remove the run directories of finished jobs past a retention (the jobs stay listed)");
  c->add_option("--state", args->state_dir, "the coordinator's state directory (not running)")
      ->required();
  c->add_option("--older-than", args->older_than,
                "jobs that finished at least this long ago: 90s, 30m, 12h, 7d")
      ->required();
  c->add_option("--keep-jobs", args->keep_jobs,
                "and never the newest this many finished jobs")
      ->capture_default_str();
  c->add_flag("--dry-run", args->dry_run, "say what would be removed, remove nothing");
  c->add_option("--reuse-catalog", args->reuse_catalog,
                "the reuse catalogue the coordinator uses (default: STATE/reuse.db)");
  c->callback([run, args] { *run = [args] { return RunGc(*args); }; });
}

}  // namespace coupler::cli
