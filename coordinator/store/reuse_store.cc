#include "coordinator/store/reuse_store.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace coupler::store {
namespace {

namespace fs = std::filesystem;

// Its own application id and version: this file is not coupler.db and is never read as one.
constexpr int64_t kReuseApplicationId = 0x43505255;  // "CPRU"
constexpr int64_t kReuseSchemaVersion = 1;
constexpr int kBusyTimeoutMs = 5000;  // two `coupler run`s of one user share the file

constexpr const char* kCreate = R"sql(
CREATE TABLE IF NOT EXISTS reuse_nodes (
  root TEXT NOT NULL,
  key TEXT NOT NULL,
  run_dir TEXT NOT NULL,
  job_id TEXT NOT NULL,
  node TEXT NOT NULL,
  PRIMARY KEY (root, key)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS reuse_files (
  root TEXT NOT NULL,
  key TEXT NOT NULL,
  path TEXT NOT NULL,
  bytes INTEGER NOT NULL,
  device INTEGER NOT NULL,
  inode INTEGER NOT NULL,
  mtime_ns INTEGER NOT NULL,
  PRIMARY KEY (root, key, path)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS file_hashes (
  path TEXT PRIMARY KEY NOT NULL,
  bytes INTEGER NOT NULL,
  mtime_ns INTEGER NOT NULL,
  inode INTEGER NOT NULL,
  hash INTEGER NOT NULL
) WITHOUT ROWID;
)sql";

Result<int64_t> Pragma(SqliteDb& db, const char* sql) {
  COUPLER_ASSIGN_OR_RETURN(SqliteStatement stmt, SqliteStatement::Prepare(db.get(), sql));
  COUPLER_ASSIGN_OR_RETURN(bool row, stmt.Step());
  return row ? stmt.ColumnInt64(0) : 0;
}

// The folder 0700 and the file 0600 before SQLite creates it with the umask's mode.
Status MakePrivate(const std::string& path) {
  const fs::path dir = fs::path(path).parent_path();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Unavailable("cannot create " + dir.string() + ": " + ec.message());
  if (::chmod(dir.c_str(), 0700) != 0) {
    return Unavailable("cannot make " + dir.string() + " private: " + std::strerror(errno));
  }
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return Unavailable("cannot open " + path + ": " + std::strerror(errno));
  const int rc = ::fchmod(fd, 0600);
  ::close(fd);
  if (rc != 0) return Unavailable("cannot make " + path + " private: " + std::strerror(errno));
  return Status::Ok();
}

}  // namespace

ReuseStore::ReuseStore(SqliteDb db) : db_(std::move(db)) {}
ReuseStore::~ReuseStore() = default;

Result<std::unique_ptr<ReuseStore>> ReuseStore::Open(const std::string& path) {
  COUPLER_RETURN_IF_ERROR(MakePrivate(path));
  Result<SqliteDb> opened =
      SqliteDb::Open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX);
  if (!opened.ok()) return opened.status().WithContext("open the reuse catalogue");
  SqliteDb db = std::move(opened).value();
  if (int rc = sqlite3_busy_timeout(db.get(), kBusyTimeoutMs); rc != SQLITE_OK) {
    return SqliteError(rc, "sqlite3_busy_timeout", db.get());
  }
  COUPLER_ASSIGN_OR_RETURN(int64_t app, Pragma(db, "PRAGMA application_id"));
  COUPLER_ASSIGN_OR_RETURN(int64_t version, Pragma(db, "PRAGMA user_version"));
  if ((app != 0 && app != kReuseApplicationId) || version > kReuseSchemaVersion) {
    return InvalidArgument(path + " is not a reuse catalogue this coupler reads (application_id " +
                           std::to_string(app) + ", version " + std::to_string(version) +
                           "); move it away");
  }
  // A catalogue is a cache of what may be linked, not state: WAL for concurrent coordinators of
  // one user, no fsync (a lost entry only means a node runs again).
  COUPLER_RETURN_IF_ERROR(db.Exec("PRAGMA journal_mode = WAL"));
  COUPLER_RETURN_IF_ERROR(db.Exec("PRAGMA synchronous = NORMAL"));
  if (version < kReuseSchemaVersion) {
    COUPLER_ASSIGN_OR_RETURN(WriteTransaction txn, WriteTransaction::Begin(db));
    COUPLER_RETURN_IF_ERROR(db.Exec(kCreate));
    const std::string pragmas = "PRAGMA application_id = " + std::to_string(kReuseApplicationId) +
                                "; PRAGMA user_version = " + std::to_string(kReuseSchemaVersion) + ";";
    COUPLER_RETURN_IF_ERROR(db.Exec(pragmas.c_str()));
    COUPLER_RETURN_IF_ERROR(txn.Commit());
  }
  std::unique_ptr<ReuseStore> store(new ReuseStore(std::move(db)));
  COUPLER_RETURN_IF_ERROR(store->Prepare());
  return store;
}

Status ReuseStore::Prepare() {
  auto prep = [this](SqliteStatement& s, const char* sql) -> Status {
    COUPLER_ASSIGN_OR_RETURN(s, SqliteStatement::Prepare(db_.get(), sql));
    return Status::Ok();
  };
  COUPLER_RETURN_IF_ERROR(prep(find_node_,
      "SELECT run_dir, job_id, node FROM reuse_nodes WHERE root = ?1 AND key = ?2"));
  COUPLER_RETURN_IF_ERROR(prep(find_run_dir_,
      "SELECT 1 FROM reuse_nodes WHERE run_dir = ?1 LIMIT 1"));
  COUPLER_RETURN_IF_ERROR(prep(find_files_,
      "SELECT path, bytes, device, inode, mtime_ns FROM reuse_files WHERE root = ?1 AND key = ?2 "
      "ORDER BY path"));
  COUPLER_RETURN_IF_ERROR(prep(put_node_,
      "INSERT OR REPLACE INTO reuse_nodes (root, key, run_dir, job_id, node) "
      "VALUES (?1, ?2, ?3, ?4, ?5)"));
  COUPLER_RETURN_IF_ERROR(prep(delete_files_,
      "DELETE FROM reuse_files WHERE root = ?1 AND key = ?2"));
  COUPLER_RETURN_IF_ERROR(prep(put_file_,
      "INSERT OR REPLACE INTO reuse_files (root, key, path, bytes, device, inode, mtime_ns) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"));
  COUPLER_RETURN_IF_ERROR(prep(find_hash_,
      "SELECT bytes, mtime_ns, inode, hash FROM file_hashes WHERE path = ?1"));
  COUPLER_RETURN_IF_ERROR(prep(put_hash_,
      "INSERT OR REPLACE INTO file_hashes (path, bytes, mtime_ns, inode, hash) "
      "VALUES (?1, ?2, ?3, ?4, ?5)"));
  return Status::Ok();
}

Result<bool> ReuseStore::Records(const std::string& run_dir) {
  StatementReset reset(find_run_dir_);
  find_run_dir_.BindText(1, run_dir);
  return find_run_dir_.Step();
}

Result<std::optional<ReuseEntry>> ReuseStore::Find(const std::string& root, const std::string& key) {
  ReuseEntry entry;
  {
    StatementReset reset(find_node_);
    find_node_.BindText(1, root);
    find_node_.BindText(2, key);
    COUPLER_ASSIGN_OR_RETURN(bool row, find_node_.Step());
    if (!row) return std::optional<ReuseEntry>();
    entry.root = root;
    entry.key = key;
    entry.run_dir = find_node_.ColumnText(0);
    entry.job_id = find_node_.ColumnText(1);
    entry.node = find_node_.ColumnText(2);
  }
  StatementReset reset(find_files_);
  find_files_.BindText(1, root);
  find_files_.BindText(2, key);
  for (;;) {
    COUPLER_ASSIGN_OR_RETURN(bool row, find_files_.Step());
    if (!row) break;
    ReuseFile f;
    f.path = find_files_.ColumnText(0);
    f.bytes = static_cast<uint64_t>(find_files_.ColumnInt64(1));
    f.device = static_cast<uint64_t>(find_files_.ColumnInt64(2));
    f.inode = static_cast<uint64_t>(find_files_.ColumnInt64(3));
    f.mtime_ns = find_files_.ColumnInt64(4);
    entry.files.push_back(std::move(f));
  }
  return std::optional<ReuseEntry>(std::move(entry));
}

Status ReuseStore::Put(const ReuseEntry& entry) {
  COUPLER_ASSIGN_OR_RETURN(WriteTransaction txn, WriteTransaction::Begin(db_));
  {
    StatementReset reset(put_node_);
    put_node_.BindText(1, entry.root);
    put_node_.BindText(2, entry.key);
    put_node_.BindText(3, entry.run_dir);
    put_node_.BindText(4, entry.job_id);
    put_node_.BindText(5, entry.node);
    COUPLER_RETURN_IF_ERROR(put_node_.Step().status());
  }
  {
    StatementReset reset(delete_files_);
    delete_files_.BindText(1, entry.root);
    delete_files_.BindText(2, entry.key);
    COUPLER_RETURN_IF_ERROR(delete_files_.Step().status());
  }
  for (const ReuseFile& f : entry.files) {
    StatementReset reset(put_file_);
    put_file_.BindText(1, entry.root);
    put_file_.BindText(2, entry.key);
    put_file_.BindText(3, f.path);
    put_file_.BindInt64(4, static_cast<int64_t>(f.bytes));
    put_file_.BindInt64(5, static_cast<int64_t>(f.device));
    put_file_.BindInt64(6, static_cast<int64_t>(f.inode));
    put_file_.BindInt64(7, f.mtime_ns);
    COUPLER_RETURN_IF_ERROR(put_file_.Step().status());
  }
  return txn.Commit();
}

Result<std::optional<FileHashEntry>> ReuseStore::FindHash(const std::string& path) {
  StatementReset reset(find_hash_);
  find_hash_.BindText(1, path);
  COUPLER_ASSIGN_OR_RETURN(bool row, find_hash_.Step());
  if (!row) return std::optional<FileHashEntry>();
  FileHashEntry e;
  e.path = path;
  e.bytes = static_cast<uint64_t>(find_hash_.ColumnInt64(0));
  e.mtime_ns = find_hash_.ColumnInt64(1);
  e.inode = static_cast<uint64_t>(find_hash_.ColumnInt64(2));
  e.hash = static_cast<uint64_t>(find_hash_.ColumnInt64(3));
  return std::optional<FileHashEntry>(std::move(e));
}

Status ReuseStore::PutHashes(const std::vector<FileHashEntry>& entries) {
  if (entries.empty()) return Status::Ok();
  COUPLER_ASSIGN_OR_RETURN(WriteTransaction txn, WriteTransaction::Begin(db_));
  for (const FileHashEntry& e : entries) {
    StatementReset reset(put_hash_);
    put_hash_.BindText(1, e.path);
    put_hash_.BindInt64(2, static_cast<int64_t>(e.bytes));
    put_hash_.BindInt64(3, e.mtime_ns);
    put_hash_.BindInt64(4, static_cast<int64_t>(e.inode));
    put_hash_.BindInt64(5, static_cast<int64_t>(e.hash));
    COUPLER_RETURN_IF_ERROR(put_hash_.Step().status());
  }
  return txn.Commit();
}

}  // namespace coupler::store
