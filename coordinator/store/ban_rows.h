// Banned worker ids as rows of the state's `bans` table: an admin's `coupler worker ban` holds
// across restarts, so a worker pulled for bad hardware does not rejoin when the coordinator is
// restarted. Written at once (a ban is rare, and the admin is told it holds only once it is on
// disk); read back whole at start.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "coordinator/store/sqlite_db.h"
#include "runtime/status.h"

namespace coupler::store {

struct BanRecord {
  std::string worker_id;
  std::string reason;
  std::string banned_by;  // the admin key's name
  int64_t banned_ms = 0;  // Unix epoch

  friend bool operator==(const BanRecord&, const BanRecord&) = default;
};

// Not thread-safe: owned by the StateStore, used on its thread; Put and Remove run inside the
// store's write transactions.
class BanRows {
 public:
  Status Prepare(sqlite3* db);
  Status Put(const BanRecord& ban);
  Status Remove(const std::string& worker_id);
  Result<std::vector<BanRecord>> Load();  // by worker id

 private:
  SqliteStatement put_;
  SqliteStatement remove_;
  SqliteStatement load_;
};

}  // namespace coupler::store
