// The database's commit generation as the state marker (coupler.state) records it, outside the
// database and its WAL, so a restart can tell a database that lost commits — its WAL deleted,
// an older copy put back — from one that holds every commit it made.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "runtime/status.h"

namespace coupler::store {

// Written (by rename, never synced on its own) after every commit. Commits are
// synchronous=NORMAL: after a process crash everything written is there, so the database
// must hold `committed`; after a power loss only what the last completed checkpoint synced
// into the database file is sure to be, so from another boot it must hold `durable`.
struct CommitGeneration {
  uint64_t committed = 0;  // the last generation committed
  uint64_t durable = 0;    // the last generation a completed checkpoint synced to the db file
  std::string boot_id;     // the kernel's boot id when written; "" when unknown

  friend bool operator==(const CommitGeneration&, const CommitGeneration&) = default;
};

// This machine's boot id (/proc/sys/kernel/random/boot_id); "" when it cannot be read.
std::string CurrentBootId();

// The marker's text: a line for people, then the record.
std::string FormatStateMarker(const std::string& db_path, const CommitGeneration& generation);
// The record in a marker's text; nullopt when it has none (a marker written before
// generations were recorded, or one a power loss left empty): then there is nothing to check.
std::optional<CommitGeneration> ParseStateMarker(std::string_view text);

// DIR/coupler.state's record; nullopt when the marker is absent or holds none.
std::optional<CommitGeneration> ReadCommitGeneration(const std::string& dir);
// Replaces DIR/coupler.state atomically (a temporary file renamed over it), without a sync:
// a crash leaves the old or the new record, never a torn one.
Status WriteCommitGeneration(const std::string& dir, const std::string& db_path,
                             const CommitGeneration& generation);

// OK when the database's generation `found` is what `recorded` says it must at least be (the
// committed one on the boot that wrote it, the durable one after a restart of the machine);
// InvalidArgument otherwise, one line naming the files, both generations and what to do.
Status CheckCommitGeneration(const std::string& dir, const std::string& db_path,
                             const CommitGeneration& recorded, uint64_t found,
                             std::string_view boot_id);

// The `coupler coordinator` flag that starts on a state that lost commits (see
// CheckCommitGeneration), named in its refusal.
inline constexpr const char* kAcceptStateLossFlag = "--accept-state-loss";

}  // namespace coupler::store
