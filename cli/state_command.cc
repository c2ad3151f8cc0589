// `coupler state backup --state STATE DIR` and `coupler state restore DIR --state STATE`: a state
// directory copied whole — its database through SQLite's online backup (the coordinator may be
// running), its key set and HTTP tokens — and put back (coordinator/store/state_backup.h).
#include <cstdio>
#include <string>

#include <fmt/format.h>

#include "cli/commands.h"
#include "coordinator/store/state_backup.h"

namespace coupler::cli {
namespace {

struct StateArgs {
  std::string state_dir;
  std::string dir;
};

int Report(const char* what, const Result<store::BackupSummary>& r, const std::string& line) {
  if (!r.ok()) {
    std::fprintf(stderr, "coupler state %s: %s\n", what, std::string(r.status().message()).c_str());
    return r.status().code() == StatusCode::kInvalidArgument || r.status().code() == StatusCode::kNotFound
               ? kExitBadInput
               : kExitFailure;
  }
  std::printf("%s (database %.1f MiB, %zu other file(s))\n", line.c_str(),
              static_cast<double>(r->database_bytes) / (1 << 20), r->files);
  return kExitOk;
}

}  // namespace

void AddStateCommand(CLI::App& app, CommandBody* run) {
  CLI::App* state = app.add_subcommand("state", "Back up or restore a coordinator's state directory");
  state->require_subcommand(1);
  auto backup = std::make_shared<StateArgs>();
  CLI::App* b = state->add_subcommand(
      "backup", "Copy the state (online: the coordinator may run), its keys and tokens into DIR (0700)");
  b->add_option("dir", backup->dir, "a new or empty directory")->required();
  b->add_option("--state", backup->state_dir, "the coordinator's --state")->required();
  b->callback([backup, run] {
    *run = [backup] {
      return Report("backup", store::BackupState(backup->state_dir, backup->dir),
                    fmt::format("backed up {} into {}", backup->state_dir, backup->dir));
    };
  });
  auto restore = std::make_shared<StateArgs>();
  CLI::App* r = state->add_subcommand(
      "restore", "Put a backup into a state directory holding none; a coordinator started on it "
                 "resumes what the backup holds");
  r->add_option("dir", restore->dir, "a directory `coupler state backup` wrote")->required();
  r->add_option("--state", restore->state_dir, "the state directory to restore into")->required();
  r->callback([restore, run] {
    *run = [restore] {
      return Report("restore", store::RestoreState(restore->dir, restore->state_dir),
                    fmt::format("restored {} into {}: start the coordinator with --state {}",
                                restore->dir, restore->state_dir, restore->state_dir));
    };
  });
}

}  // namespace coupler::cli
