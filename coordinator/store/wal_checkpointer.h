// Copies the state's WAL into its database file and records the commit generation in the state
// marker, on a thread of its own: a checkpoint syncs the database file (tens of milliseconds
// on a busy pool's flush, up to 70 ms measured at 1,000 workers) and the marker is a file
// written and renamed, neither of which the event loop should wait for.
//
// The marker is written at most every kMarkerEvery (a file written and renamed, and a thread
// woken, for every commit would be three of them for a one-task job: a busy loop commits every
// few milliseconds), so it may lag the database by the commits of that interval: that makes
// the check at the next start (commit_generation.h) weaker for those commits, never wrong,
// since the database must hold at least what the marker records. Destruction writes the
// marker for the last commit posted, so a clean stop leaves it current.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "coordinator/store/commit_generation.h"
#include "coordinator/store/sqlite_db.h"
#include "runtime/status.h"

struct sqlite3;

namespace coupler::store {

// What a checkpoint truncates the WAL back to after a big flush grew it, rather than leaving it
// huge: the writer's connection and the checkpointer's both set it.
inline constexpr int64_t kJournalSizeLimit = int64_t{64} << 20;

// True when a passive checkpoint on `db` copied the whole WAL into the database file, which
// synchronous=NORMAL then syncs: every commit made before it began survives a power loss.
bool CheckpointCompletes(sqlite3* db);

class WalCheckpointer {
 public:
  static constexpr std::chrono::milliseconds kMarkerEvery{20};

  // Opens its own connection to `db_path` (WAL mode already set by the writer). `initial`: what
  // the writer recorded at open.
  static Result<std::unique_ptr<WalCheckpointer>> Start(std::string dir, std::string db_path,
                                                       CommitGeneration initial);
  WalCheckpointer(const WalCheckpointer&) = delete;
  WalCheckpointer& operator=(const WalCheckpointer&) = delete;
  ~WalCheckpointer();

  // After each commit: the generation now committed, and whether the WAL is long enough to be
  // copied. Never waits for the thread; requests made while it works are merged.
  void Committed(uint64_t generation, bool checkpoint);
  // The last generation a completed checkpoint synced into the database file.
  uint64_t durable() const { return durable_.load(std::memory_order_acquire); }
  // Waits until everything posted so far is done: the marker written, a checkpoint asked for
  // run. For a caller that must see the marker on disk now (tests, tools).
  void Settle();

 private:
  WalCheckpointer(std::string dir, std::string db_path, SqliteDb db, CommitGeneration initial);
  void Run();

  const std::string dir_;
  const std::string db_path_;
  SqliteDb db_;  // the thread's alone
  const std::string boot_id_;
  std::atomic<uint64_t> durable_;

  std::mutex mu_;
  std::condition_variable wake_;
  std::condition_variable settled_;
  uint64_t posted_;           // guarded by mu_: the last generation committed
  uint64_t written_;          // guarded by mu_: the generation the marker last recorded
  bool checkpoint_ = false;   // guarded by mu_: a checkpoint is asked for
  bool working_ = false;      // guarded by mu_
  bool stop_ = false;         // guarded by mu_
  bool hurry_ = false;        // guarded by mu_: a Settle waits, the interval does not apply
  std::chrono::steady_clock::time_point last_marker_;  // guarded by mu_
  bool marker_failed_ = false;  // the thread's: the last marker write failed (warned once)
  std::thread thread_;        // last: started once everything above is set
};

}  // namespace coupler::store
