#include "coordinator/store/counter_rows.h"

#include <limits>

namespace coupler::store {
namespace {

constexpr const char* kUpsert =
    "INSERT INTO counters (name, value) VALUES (?1, ?2) "
    "ON CONFLICT (name) DO UPDATE SET value = excluded.value";
constexpr const char* kLoad = "SELECT name, value FROM counters";

// SQLite integers are signed; a counter never gets near 2^63, but clamp rather than wrap.
int64_t ToSqlValue(uint64_t v) {
  return v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
             ? std::numeric_limits<int64_t>::max()
             : static_cast<int64_t>(v);
}

}  // namespace

Status CounterRows::Prepare(sqlite3* db) {
  COUPLER_ASSIGN_OR_RETURN(upsert_, SqliteStatement::Prepare(db, kUpsert));
  COUPLER_ASSIGN_OR_RETURN(load_, SqliteStatement::Prepare(db, kLoad));
  return Status::Ok();
}

void CounterRows::Set(const std::map<std::string, uint64_t>& values) {
  for (const auto& [name, value] : values) {
    auto on_disk = written_.find(name);
    if (on_disk != written_.end() && on_disk->second == value) {
      buffered_.erase(name);
    } else {
      buffered_[name] = value;
    }
  }
}

Status CounterRows::WriteBuffered() {
  for (const auto& [name, value] : buffered_) {
    StatementReset reset(upsert_);
    upsert_.BindText(1, name);
    upsert_.BindInt64(2, ToSqlValue(value));
    COUPLER_RETURN_IF_ERROR(upsert_.Step().status());
  }
  return Status::Ok();
}

void CounterRows::Committed() {
  for (auto& [name, value] : buffered_) written_[name] = value;
  buffered_.clear();
}

Result<std::map<std::string, uint64_t>> CounterRows::Load() {
  StatementReset reset(load_);
  std::map<std::string, uint64_t> values;
  while (true) {
    COUPLER_ASSIGN_OR_RETURN(bool row, load_.Step());
    if (!row) break;
    const int64_t v = load_.ColumnInt64(1);
    values[load_.ColumnText(0)] = v < 0 ? 0 : static_cast<uint64_t>(v);
  }
  written_ = values;
  return values;
}

}  // namespace coupler::store
