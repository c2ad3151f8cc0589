#include "coordinator/store/sqlite_db.h"

#include <sqlite3.h>

namespace coupler::store {
namespace {

// Enough of the SQL to recognise the statement in an error message.
std::string StatementLabel(std::string_view sql) {
  constexpr size_t kMaxLabel = 48;
  if (sql.size() <= kMaxLabel) return std::string(sql);
  return std::string(sql.substr(0, kMaxLabel)) + "...";
}

}  // namespace

Status SqliteError(int rc, std::string_view call, sqlite3* db) {
  std::string message(call);
  message += ": ";
  // sqlite3_errmsg describes the connection's latest failure, which is this one when we have a
  // connection; without one, only the code's generic text is known.
  message += db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_CANTOPEN:
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_IOERR:
    case SQLITE_FULL:
      return Unavailable(std::move(message));
    case SQLITE_NOMEM:
      return ResourceExhausted(std::move(message));
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
    case SQLITE_TOOBIG:
      return InvalidArgument(std::move(message));
    default:
      return Internal(std::move(message));
  }
}

// ---- SqliteDb ----

Result<SqliteDb> SqliteDb::Open(const std::string& path, int flags) {
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  // sqlite3_open_v2 hands back a connection even on failure (to carry the message); own it at
  // once so every path closes it.
  SqliteDb db(raw);
  if (rc != SQLITE_OK) return SqliteError(rc, "sqlite3_open_v2(" + path + ")", raw);
  if (raw == nullptr) return ResourceExhausted("sqlite3_open_v2(" + path + "): out of memory");
  return db;
}

SqliteDb::SqliteDb(SqliteDb&& other) noexcept : db_(other.db_) { other.db_ = nullptr; }

SqliteDb& SqliteDb::operator=(SqliteDb&& other) noexcept {
  if (this != &other) {
    Close();
    db_ = other.db_;
    other.db_ = nullptr;
  }
  return *this;
}

SqliteDb::~SqliteDb() { Close(); }

void SqliteDb::Close() noexcept {
  if (db_ != nullptr) sqlite3_close_v2(db_);
  db_ = nullptr;
}

Status SqliteDb::Exec(const char* sql) {
  int rc = sqlite3_exec(db_, sql, nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return SqliteError(rc, "sqlite3_exec(" + StatementLabel(sql) + ")", db_);
  return Status::Ok();
}

// ---- SqliteStatement ----

Result<SqliteStatement> SqliteStatement::Prepare(sqlite3* db, std::string_view sql) {
  sqlite3_stmt* raw = nullptr;
  int rc = sqlite3_prepare_v3(db, sql.data(), static_cast<int>(sql.size()),
                              SQLITE_PREPARE_PERSISTENT, &raw, nullptr);
  SqliteStatement stmt(raw, db, StatementLabel(sql));
  if (rc != SQLITE_OK) {
    return SqliteError(rc, "sqlite3_prepare_v3(" + stmt.label_ + ")", db);
  }
  return stmt;
}

SqliteStatement::SqliteStatement(SqliteStatement&& other) noexcept
    : stmt_(other.stmt_),
      db_(other.db_),
      label_(std::move(other.label_)),
      bind_rc_(other.bind_rc_),
      bind_index_(other.bind_index_) {
  other.stmt_ = nullptr;
}

SqliteStatement& SqliteStatement::operator=(SqliteStatement&& other) noexcept {
  if (this != &other) {
    if (stmt_ != nullptr) sqlite3_finalize(stmt_);
    stmt_ = other.stmt_;
    db_ = other.db_;
    label_ = std::move(other.label_);
    bind_rc_ = other.bind_rc_;
    bind_index_ = other.bind_index_;
    other.stmt_ = nullptr;
  }
  return *this;
}

SqliteStatement::~SqliteStatement() {
  if (stmt_ != nullptr) sqlite3_finalize(stmt_);
}

void SqliteStatement::NoteBind(int rc, int index) {
  if (rc != SQLITE_OK && bind_rc_ == SQLITE_OK) {
    bind_rc_ = rc;
    bind_index_ = index;
  }
}

void SqliteStatement::BindText(int index, std::string_view value) {
  // A null pointer would bind SQL NULL, not an empty string (and break NOT NULL columns); an
  // empty string_view may well carry one.
  const char* data = value.data() != nullptr ? value.data() : "";
  NoteBind(sqlite3_bind_text64(stmt_, index, data, value.size(), SQLITE_STATIC, SQLITE_UTF8),
           index);
}

void SqliteStatement::BindBlob(int index, std::string_view value) {
  const char* data = value.data() != nullptr ? value.data() : "";
  NoteBind(sqlite3_bind_blob64(stmt_, index, data, value.size(), SQLITE_STATIC), index);
}

void SqliteStatement::BindInt64(int index, int64_t value) {
  NoteBind(sqlite3_bind_int64(stmt_, index, value), index);
}

void SqliteStatement::BindDouble(int index, double value) {
  NoteBind(sqlite3_bind_double(stmt_, index, value), index);
}

Result<bool> SqliteStatement::Step() {
  if (bind_rc_ != SQLITE_OK) {
    return SqliteError(bind_rc_,
                       "sqlite3_bind parameter " + std::to_string(bind_index_) + " of (" +
                           label_ + ")",
                       db_);
  }
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return SqliteError(rc, "sqlite3_step(" + label_ + ")", db_);
}

int64_t SqliteStatement::ColumnInt64(int index) const {
  return sqlite3_column_int64(stmt_, index);
}

double SqliteStatement::ColumnDouble(int index) const {
  return sqlite3_column_double(stmt_, index);
}

std::string SqliteStatement::ColumnText(int index) const {
  const unsigned char* text = sqlite3_column_text(stmt_, index);
  // Bytes after the text call: the documented order, since text may convert the value.
  int size = sqlite3_column_bytes(stmt_, index);
  if (text == nullptr) return std::string();
  return std::string(reinterpret_cast<const char*>(text), static_cast<size_t>(size));
}

std::string SqliteStatement::ColumnBlob(int index) const { return std::string(ColumnBlobView(index)); }

std::string_view SqliteStatement::ColumnBlobView(int index) const {
  const void* blob = sqlite3_column_blob(stmt_, index);
  int size = sqlite3_column_bytes(stmt_, index);
  if (blob == nullptr) return {};
  return std::string_view(static_cast<const char*>(blob), static_cast<size_t>(size));
}

void SqliteStatement::Reset() noexcept {
  if (stmt_ == nullptr) return;
  // The code sqlite3_reset returns is the last Step's error, already reported there.
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
  bind_rc_ = SQLITE_OK;
  bind_index_ = 0;
}

// ---- WriteTransaction ----

// BEGIN/COMMIT/ROLLBACK go through sqlite3_exec: once per flush, a few microseconds to compile,
// against milliseconds for the rows, so caching them would buy nothing.
Result<WriteTransaction> WriteTransaction::Begin(SqliteDb& db) {
  COUPLER_RETURN_IF_ERROR(db.Exec("BEGIN IMMEDIATE"));
  return WriteTransaction(&db);
}

WriteTransaction::WriteTransaction(WriteTransaction&& other) noexcept : db_(other.db_) {
  other.db_ = nullptr;
}

WriteTransaction::~WriteTransaction() {
  // SQLite may already have rolled back on its own after some errors (full disk, I/O);
  // autocommit mode tells whether a transaction is still open.
  if (db_ != nullptr && db_->get() != nullptr && sqlite3_get_autocommit(db_->get()) == 0) {
    sqlite3_exec(db_->get(), "ROLLBACK", nullptr, nullptr, nullptr);
  }
}

Status WriteTransaction::Commit() {
  COUPLER_CHECK(db_ != nullptr) << "Commit on a finished transaction";
  // On failure (e.g. SQLITE_BUSY) the transaction stays open; the destructor rolls it back.
  COUPLER_RETURN_IF_ERROR(db_->Exec("COMMIT"));
  db_ = nullptr;
  return Status::Ok();
}

}  // namespace coupler::store
