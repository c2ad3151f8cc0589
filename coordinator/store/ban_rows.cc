#include "coordinator/store/ban_rows.h"

namespace coupler::store {
namespace {

constexpr const char* kPut =
    "INSERT OR REPLACE INTO bans (worker_id, reason, banned_by, banned_ms) VALUES (?1, ?2, ?3, ?4)";
constexpr const char* kRemove = "DELETE FROM bans WHERE worker_id = ?1";
constexpr const char* kLoad = "SELECT worker_id, reason, banned_by, banned_ms FROM bans ORDER BY worker_id";

}  // namespace

Status BanRows::Prepare(sqlite3* db) {
  COUPLER_ASSIGN_OR_RETURN(put_, SqliteStatement::Prepare(db, kPut));
  COUPLER_ASSIGN_OR_RETURN(remove_, SqliteStatement::Prepare(db, kRemove));
  COUPLER_ASSIGN_OR_RETURN(load_, SqliteStatement::Prepare(db, kLoad));
  return Status::Ok();
}

Status BanRows::Put(const BanRecord& ban) {
  StatementReset reset(put_);
  put_.BindText(1, ban.worker_id);
  put_.BindText(2, ban.reason);
  put_.BindText(3, ban.banned_by);
  put_.BindInt64(4, ban.banned_ms);
  return put_.Step().status();
}

Status BanRows::Remove(const std::string& worker_id) {
  StatementReset reset(remove_);
  remove_.BindText(1, worker_id);
  return remove_.Step().status();
}

Result<std::vector<BanRecord>> BanRows::Load() {
  StatementReset reset(load_);
  std::vector<BanRecord> bans;
  while (true) {
    COUPLER_ASSIGN_OR_RETURN(bool row, load_.Step());
    if (!row) break;
    bans.push_back({load_.ColumnText(0), load_.ColumnText(1), load_.ColumnText(2), load_.ColumnInt64(3)});
  }
  return bans;
}

}  // namespace coupler::store
