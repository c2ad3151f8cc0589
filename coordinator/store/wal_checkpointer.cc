#include "coordinator/store/wal_checkpointer.h"

#include <sqlite3.h>

#include <string>
#include <utility>

#include "runtime/logging.h"

namespace coupler::store {
bool CheckpointCompletes(sqlite3* db) {
  int log_frames = -1;
  int copied = -1;
  const int rc =
      sqlite3_wal_checkpoint_v2(db, nullptr, SQLITE_CHECKPOINT_PASSIVE, &log_frames, &copied);
  return rc == SQLITE_OK && log_frames >= 0 && log_frames == copied;
}

Result<std::unique_ptr<WalCheckpointer>> WalCheckpointer::Start(std::string dir,
                                                                std::string db_path,
                                                                CommitGeneration initial) {
  COUPLER_ASSIGN_OR_RETURN(SqliteDb db,
                           SqliteDb::Open(db_path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX));
  // As the writer's connection: a checkpoint syncs the database file, and truncates a WAL
  // that a big flush grew.
  const std::string pragmas = "PRAGMA synchronous = NORMAL; PRAGMA journal_size_limit = " +
                              std::to_string(kJournalSizeLimit);
  COUPLER_RETURN_IF_ERROR(db.Exec(pragmas.c_str()));
  return std::unique_ptr<WalCheckpointer>(
      new WalCheckpointer(std::move(dir), std::move(db_path), std::move(db), std::move(initial)));
}

WalCheckpointer::WalCheckpointer(std::string dir, std::string db_path, SqliteDb db,
                                 CommitGeneration initial)
    : dir_(std::move(dir)),
      db_path_(std::move(db_path)),
      db_(std::move(db)),
      boot_id_(initial.boot_id),
      durable_(initial.durable),
      posted_(initial.committed),
      written_(initial.committed),
      thread_([this] { Run(); }) {}

WalCheckpointer::~WalCheckpointer() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void WalCheckpointer::Committed(uint64_t generation, bool checkpoint) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    posted_ = generation;
    checkpoint_ = checkpoint_ || checkpoint;
  }
  wake_.notify_one();
}

void WalCheckpointer::Settle() {
  std::unique_lock<std::mutex> lock(mu_);
  hurry_ = true;
  wake_.notify_one();
  settled_.wait(lock, [&] { return !working_ && written_ == posted_ && !checkpoint_; });
}

void WalCheckpointer::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    wake_.wait(lock, [&] { return stop_ || written_ != posted_ || checkpoint_; });
    // A marker alone waits out the interval since the last one, taking the commits made
    // meanwhile with it; a checkpoint, a stop or a Settle does not wait.
    wake_.wait_until(lock, last_marker_ + kMarkerEvery, [&] { return stop_ || checkpoint_ || hurry_; });
    if (written_ == posted_ && !checkpoint_) break;  // stopping, nothing left to write
    const uint64_t generation = posted_;
    const bool checkpoint = checkpoint_;
    checkpoint_ = false;
    working_ = true;
    lock.unlock();
    // Every commit up to `generation` was in the WAL before this checkpoint began.
    if (checkpoint && CheckpointCompletes(db_.get())) {
      durable_.store(generation, std::memory_order_release);
    }
    const Status recorded = WriteCommitGeneration(dir_, db_path_, {generation, durable(), boot_id_});
    if (!recorded.ok() && !marker_failed_) {
      // The commits stand; only the check at the next start is weaker until a write works.
      Logger("store")->warn("{}: a lost WAL would go unnoticed at the next start until it can be "
                            "written",
                            recorded.message());
    }
    marker_failed_ = !recorded.ok();
    lock.lock();
    last_marker_ = std::chrono::steady_clock::now();
    written_ = generation;
    if (written_ == posted_) hurry_ = false;
    working_ = false;
    settled_.notify_all();
  }
  settled_.notify_all();
}

}  // namespace coupler::store
