// The pool's counters as rows of the state's `counters` table (name → value): jobs submitted
// and finished, tasks done and failed, retries and failures by cause, workers lost. Written in
// the same transaction as the rows whose events they count, and read back at start, so a
// restarted coordinator's coupler_*_total series go on from where they were instead of
// starting again at 0 (which Prometheus would read as a reset and alerts as a drop).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "coordinator/store/sqlite_db.h"
#include "runtime/status.h"

namespace coupler::store {

// Not thread-safe: owned by the StateStore, used on its thread.
class CounterRows {
 public:
  Status Prepare(sqlite3* db);

  // Buffers the values that differ from those last written; a name not given keeps its row.
  void Set(const std::map<std::string, uint64_t>& values);
  size_t pending() const { return buffered_.size(); }
  // Inside the caller's write transaction.
  Status WriteBuffered();
  // The caller's transaction committed: what was buffered is what is on disk now.
  void Committed();

  // Every row on disk (what a start restores); also what later Sets compare with.
  Result<std::map<std::string, uint64_t>> Load();

 private:
  SqliteStatement upsert_;
  SqliteStatement load_;
  std::map<std::string, uint64_t> buffered_;
  std::map<std::string, uint64_t> written_;
};

}  // namespace coupler::store
