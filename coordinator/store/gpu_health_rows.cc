#include "coordinator/store/gpu_health_rows.h"

namespace coupler::store {
namespace {

constexpr const char* kPut =
    "INSERT OR REPLACE INTO gpu_health (worker_id, gpu, uuid, fence, fenced_ms, ecc_seen, "
    "xid_seen) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";
constexpr const char* kLoad =
    "SELECT worker_id, gpu, uuid, fence, fenced_ms, ecc_seen, xid_seen FROM gpu_health "
    "ORDER BY worker_id, gpu";

}  // namespace

Status GpuHealthRows::Prepare(sqlite3* db) {
  COUPLER_ASSIGN_OR_RETURN(put_, SqliteStatement::Prepare(db, kPut));
  COUPLER_ASSIGN_OR_RETURN(load_, SqliteStatement::Prepare(db, kLoad));
  return Status::Ok();
}

Status GpuHealthRows::Put(const GpuHealthRecord& r) {
  StatementReset reset(put_);
  put_.BindText(1, r.worker_id);
  put_.BindInt64(2, r.gpu);
  put_.BindText(3, r.uuid);
  put_.BindText(4, r.fence);
  put_.BindInt64(5, r.fenced_ms);
  // SQLite integers are signed 64-bit: counts beyond that are not a real GPU's.
  put_.BindInt64(6, static_cast<int64_t>(r.ecc_seen));
  put_.BindInt64(7, static_cast<int64_t>(r.xid_seen));
  return put_.Step().status();
}

Result<std::vector<GpuHealthRecord>> GpuHealthRows::Load() {
  StatementReset reset(load_);
  std::vector<GpuHealthRecord> out;
  while (true) {
    COUPLER_ASSIGN_OR_RETURN(bool row, load_.Step());
    if (!row) break;
    GpuHealthRecord r;
    r.worker_id = load_.ColumnText(0);
    r.gpu = static_cast<uint32_t>(load_.ColumnInt64(1));
    r.uuid = load_.ColumnText(2);
    r.fence = load_.ColumnText(3);
    r.fenced_ms = load_.ColumnInt64(4);
    r.ecc_seen = static_cast<uint64_t>(load_.ColumnInt64(5));
    r.xid_seen = static_cast<uint64_t>(load_.ColumnInt64(6));
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace coupler::store
