// Move-only owners of a SQLite connection, its prepared statements and a write transaction, and
// the one place a SQLite result code becomes a Status (the call, then sqlite3_errmsg). Nothing
// outside coordinator/store includes sqlite3.h.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "runtime/status.h"

struct sqlite3;
struct sqlite3_stmt;

namespace coupler::store {

// `call` names what failed ("sqlite3_open_v2(/x/coupler.db)"); `db` may be null, in which case
// the generic text for `rc` is used. Busy/locked, can't-open, read-only, I/O and disk-full map to
// Unavailable (the environment, retry or fix it), not-a-database and corrupt to InvalidArgument
// (the file is not usable state: point elsewhere), out of memory to ResourceExhausted.
Status SqliteError(int rc, std::string_view call, sqlite3* db);

// Owns one connection. Destroying it closes with sqlite3_close_v2, which is safe even if a
// statement somehow outlived it (the close is deferred until the last statement is finalized).
class SqliteDb {
 public:
  SqliteDb() = default;
  // `flags` are SQLITE_OPEN_* flags.
  static Result<SqliteDb> Open(const std::string& path, int flags);

  SqliteDb(SqliteDb&& other) noexcept;
  SqliteDb& operator=(SqliteDb&& other) noexcept;
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;
  ~SqliteDb();

  sqlite3* get() const { return db_; }

  // Runs SQL that returns no rows we need (PRAGMA assignments, BEGIN, DDL).
  Status Exec(const char* sql);

 private:
  explicit SqliteDb(sqlite3* db) : db_(db) {}
  void Close() noexcept;

  sqlite3* db_ = nullptr;
};

// Owns one prepared statement, borrowing its connection (which must outlive it). Meant to be
// prepared once and reused: bind, Step until done, Reset (StatementReset does the last part).
class SqliteStatement {
 public:
  SqliteStatement() = default;
  static Result<SqliteStatement> Prepare(sqlite3* db, std::string_view sql);

  SqliteStatement(SqliteStatement&& other) noexcept;
  SqliteStatement& operator=(SqliteStatement&& other) noexcept;
  SqliteStatement(const SqliteStatement&) = delete;
  SqliteStatement& operator=(const SqliteStatement&) = delete;
  ~SqliteStatement();

  // Parameters are 1-based. Text and blobs are bound without a copy: they must stay alive and
  // unchanged until the statement is reset. A failed bind is remembered and reported by Step,
  // so a row's binds need not each be checked.
  void BindText(int index, std::string_view value);
  void BindBlob(int index, std::string_view value);
  void BindInt64(int index, int64_t value);
  void BindDouble(int index, double value);

  // True while there is a row to read, false once done; an error names the statement.
  Result<bool> Step();

  // Columns are 0-based. Text and blob keep embedded NUL bytes.
  int64_t ColumnInt64(int index) const;
  double ColumnDouble(int index) const;
  std::string ColumnText(int index) const;
  std::string ColumnBlob(int index) const;
  // Without a copy: valid until the next Step or reset.
  std::string_view ColumnBlobView(int index) const;

  // Rewinds and drops bindings, ending any read snapshot the statement held.
  void Reset() noexcept;

 private:
  SqliteStatement(sqlite3_stmt* stmt, sqlite3* db, std::string label)
      : stmt_(stmt), db_(db), label_(std::move(label)) {}
  void NoteBind(int rc, int index);

  sqlite3_stmt* stmt_ = nullptr;
  sqlite3* db_ = nullptr;
  std::string label_;  // the start of the SQL, for error messages
  int bind_rc_ = 0;     // first failed bind since the last Reset (SQLITE_OK when none)
  int bind_index_ = 0;
};

// Resets a cached statement when the scope ends, on every path: a SELECT abandoned half-read would
// otherwise keep its WAL snapshot open (blocking checkpoints, growing the WAL), and its bindings
// would point at strings that no longer exist.
class StatementReset {
 public:
  explicit StatementReset(SqliteStatement& stmt) : stmt_(stmt) {}
  StatementReset(const StatementReset&) = delete;
  StatementReset& operator=(const StatementReset&) = delete;
  ~StatementReset() { stmt_.Reset(); }

 private:
  SqliteStatement& stmt_;
};

// A write transaction (BEGIN IMMEDIATE: takes the write lock up front, so a busy database fails
// at Begin, after the busy timeout, rather than halfway through). Rolls back unless committed.
class WriteTransaction {
 public:
  static Result<WriteTransaction> Begin(SqliteDb& db);

  WriteTransaction(WriteTransaction&& other) noexcept;
  WriteTransaction& operator=(WriteTransaction&&) = delete;
  WriteTransaction(const WriteTransaction&) = delete;
  WriteTransaction& operator=(const WriteTransaction&) = delete;
  ~WriteTransaction();

  Status Commit();

 private:
  explicit WriteTransaction(SqliteDb* db) : db_(db) {}

  SqliteDb* db_ = nullptr;  // null once committed or moved from
};

}  // namespace coupler::store
