#include "coordinator/store/state_backup.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <thread>

#include "coordinator/store/reuse_store.h"
#include "coordinator/store/sqlite_db.h"
#include "coordinator/store/state_dir_lock.h"
#include "coordinator/store/state_files.h"
#include "coordinator/store/state_store.h"

namespace coupler::store {
namespace {

namespace fs = std::filesystem;

// What a state directory holds besides its database that a restore needs.
constexpr const char* kKeysDir = "keys";
constexpr const char* kTokens[] = {"http-token", "metrics-token"};

Status MakePrivateDir(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Internal("cannot create " + dir + ": " + ec.message());
  if (::chmod(dir.c_str(), 0700) != 0) return Internal("cannot chmod " + dir);
  return Status::Ok();
}

// SQLite's online backup of `from` into a new file `to` (0600): a consistent copy of the last
// commit, taken page by page while the owner may go on writing (it restarts on a change).
Status CopyDatabase(const std::string& from, const std::string& to) {
  {
    const int fd = ::open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return Internal("cannot create " + to + ": " + std::strerror(errno));
    ::close(fd);
  }
  COUPLER_ASSIGN_OR_RETURN(SqliteDb source, SqliteDb::Open(from, SQLITE_OPEN_READONLY));
  COUPLER_ASSIGN_OR_RETURN(SqliteDb target, SqliteDb::Open(to, SQLITE_OPEN_READWRITE));
  sqlite3_busy_timeout(source.get(), 5000);
  sqlite3_backup* backup = sqlite3_backup_init(target.get(), "main", source.get(), "main");
  if (backup == nullptr) {
    return Internal("cannot back up " + from + ": " + sqlite3_errmsg(target.get()));
  }
  int rc = SQLITE_OK;
  do {
    rc = sqlite3_backup_step(backup, 1024);
    if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  } while (rc == SQLITE_OK || rc == SQLITE_BUSY || rc == SQLITE_LOCKED);
  sqlite3_backup_finish(backup);
  if (rc != SQLITE_DONE) {
    return Internal("cannot back up " + from + " to " + to + ": " + sqlite3_errstr(rc));
  }
  return Status::Ok();
}

// A file or a folder tree, each keeping its permission bits (secret keys stay 0600).
Status CopyKeepingModes(const fs::path& from, const fs::path& to, size_t* files) {
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(from, ec);
  if (ec) return Internal("cannot read " + from.string() + ": " + ec.message());
  if (fs::is_directory(st)) {
    fs::create_directory(to, ec);
    if (ec) return Internal("cannot create " + to.string() + ": " + ec.message());
    for (const fs::directory_entry& e : fs::directory_iterator(from, ec)) {
      COUPLER_RETURN_IF_ERROR(CopyKeepingModes(e.path(), to / e.path().filename(), files));
    }
    if (ec) return Internal("cannot list " + from.string() + ": " + ec.message());
  } else if (fs::is_regular_file(st)) {
    fs::copy_file(from, to, ec);
    if (ec) return Internal("cannot copy " + from.string() + ": " + ec.message());
    ++*files;
  } else {
    return Status::Ok();  // sockets, links: nothing a restore needs
  }
  fs::permissions(to, st.permissions(), fs::perm_options::replace, ec);
  if (ec) return Internal("cannot chmod " + to.string() + ": " + ec.message());
  return Status::Ok();
}

// The key set and the tokens, from `from` to `to`, those present.
Status CopySideFiles(const fs::path& from, const fs::path& to, size_t* files) {
  if (fs::exists(from / kKeysDir)) COUPLER_RETURN_IF_ERROR(CopyKeepingModes(from / kKeysDir, to / kKeysDir, files));
  for (const char* token : kTokens) {
    if (fs::exists(from / token)) COUPLER_RETURN_IF_ERROR(CopyKeepingModes(from / token, to / token, files));
  }
  return Status::Ok();
}

// Everything a state is, from `from` into `to`: the database and the reuse catalogue through
// SQLite's backup (consistent while a coordinator writes), then the key set and the tokens.
// A backup and a restore are the same copy in opposite directions.
Result<BackupSummary> CopyState(const fs::path& from, const fs::path& to) {
  BackupSummary summary;
  COUPLER_RETURN_IF_ERROR(CopyDatabase((from / StateStore::kFileName).string(),
                                       (to / StateStore::kFileName).string()));
  std::error_code ec;
  summary.database_bytes = fs::file_size(to / StateStore::kFileName, ec);
  if (fs::exists(from / ReuseStore::kFileName)) {
    COUPLER_RETURN_IF_ERROR(CopyDatabase((from / ReuseStore::kFileName).string(),
                                         (to / ReuseStore::kFileName).string()));
    ++summary.files;
  }
  COUPLER_RETURN_IF_ERROR(CopySideFiles(from, to, &summary.files));
  return summary;
}

}  // namespace

Result<BackupSummary> BackupState(const std::string& state_dir, const std::string& backup_dir) {
  const fs::path state(state_dir);
  const fs::path backup(backup_dir);
  const fs::path db = state / StateStore::kFileName;
  if (!fs::exists(db)) return NotFound("no coupler state in " + state_dir + " (no " + db.filename().string() + ")");
  std::error_code ec;
  if (fs::exists(backup) && !fs::is_empty(backup, ec)) {
    return InvalidArgument(backup_dir + " is not empty: back up into a new directory");
  }
  COUPLER_RETURN_IF_ERROR(MakePrivateDir(backup_dir));
  return CopyState(state, backup);
}

Result<BackupSummary> RestoreState(const std::string& backup_dir, const std::string& state_dir) {
  const fs::path backup(backup_dir);
  const fs::path state(state_dir);
  if (!fs::exists(backup / StateStore::kFileName)) {
    return NotFound(backup_dir + " is no state backup (no " + std::string(StateStore::kFileName) + ")");
  }
  // The database, its WAL and the marker describe one state: none of an older one may stay
  // beside the restored database.
  const std::string db_file = StateStore::kFileName;
  for (const std::string& name : {db_file, db_file + "-wal", db_file + "-shm", std::string(kStateMarker)}) {
    if (fs::exists(state / name)) {
      return InvalidArgument(state_dir + " already holds a state (" + name + "): restore into a new "
                             "directory, or move that one away first (a restore over it would lose it)");
    }
  }
  COUPLER_RETURN_IF_ERROR(MakePrivateDir(state_dir));
  // No coordinator may start on it while the files arrive.
  COUPLER_ASSIGN_OR_RETURN(StateDirLock lock, StateDirLock::Acquire(state_dir));
  return CopyState(backup, state);
}

}  // namespace coupler::store
