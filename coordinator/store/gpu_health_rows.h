// What the coordinator knows of each worker GPU's errors, as rows of the state's `gpu_health`
// table: its fence (why placement avoids it, until an operator clears it) and the error counts
// taken as its baseline (only errors beyond them are new). Kept so that a restart neither
// forgets a fenced GPU nor fences again one an operator cleared. Written at once when one
// changes (rare: an error, an operator's command); read back whole at start.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "coordinator/store/sqlite_db.h"
#include "runtime/status.h"

namespace coupler::store {

struct GpuHealthRecord {
  std::string worker_id;
  uint32_t gpu = 0;    // the worker's CUDA ordinal
  std::string uuid;    // the board it was ("GPU-..."), as the worker last registered it
  std::string fence;   // why placement avoids it; empty: it does not
  int64_t fenced_ms = 0;  // Unix epoch
  // Baselines: uncorrectable ECC errors (volatile count) and the worker's count of XID events
  // already seen; a sample above either is a new error.
  uint64_t ecc_seen = 0;
  uint64_t xid_seen = 0;

  friend bool operator==(const GpuHealthRecord&, const GpuHealthRecord&) = default;
};

// Not thread-safe: owned by the StateStore, used on its thread; Put runs inside the store's
// write transactions.
class GpuHealthRows {
 public:
  Status Prepare(sqlite3* db);
  Status Put(const GpuHealthRecord& record);
  Result<std::vector<GpuHealthRecord>> Load();  // by worker id, then GPU

 private:
  SqliteStatement put_;
  SqliteStatement load_;
};

}  // namespace coupler::store
