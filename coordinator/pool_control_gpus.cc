// PoolControl's side of GPU health: samples against fences, an admin's fence or clear, and
// the fences restored at start (coordinator/gpu_fences.h decides; this records and applies).
#include <algorithm>

#include <fmt/format.h>

#include "coordinator/pool_control.h"
#include "runtime/logging.h"

namespace coupler::coordinator {

void PoolControl::SyncFences(const std::string& worker_id) {
  WorkerEntry* w = scheduler_.registry().Find(worker_id);
  if (w == nullptr) return;
  w->fenced_gpus = gpu_fences_.Fenced(worker_id);
  // Only fences of GPUs it registered count: an ordinal it no longer offers changes nothing.
  std::erase_if(w->fenced_gpus, [&](uint32_t g) {
    return std::none_of(w->info.gpus.begin(), w->info.gpus.end(),
                        [g](const wire::GpuInfo& i) { return i.index == g; });
  });
  w->gpu_shares.SetFenced({w->fenced_gpus.begin(), w->fenced_gpus.end()});
  w->gpu_preference = RankGpus(w->gpu.samples, w->fenced_gpus);
}

void PoolControl::ObserveGpuHealth(const std::string& worker_id, const wire::Heartbeat& beat) {
  WorkerEntry* w = scheduler_.registry().Find(worker_id);
  if (w == nullptr || beat.gpus.empty()) return;
  // Fences are dated by the wall clock: `coupler workers` shows since when.
  GpuFences::Observed seen = gpu_fences_.Observe(worker_id, w->info.gpus, beat.gpus, WallClockMs());
  if (!seen.changed.empty()) {
    // Applied even when the state cannot take it (a full disk): placement must avoid a faulty
    // GPU now; only a restart before the disk frees up would forget the fence.
    if (Status written = ledger_.store().PutGpuHealth(seen.changed); !written.ok()) {
      Logger("coordinator")->error("GPU health of worker {} not recorded: {}", worker_id,
                                   written.message());
    }
    gpu_fences_.Apply(seen.changed);
  }
  for (const std::string& fenced : seen.fenced) {
    Logger("coordinator")->error("{}: no more work goes to it until an admin runs `coupler worker "
                                 "clear-gpu {}`", fenced, worker_id);
  }
  SyncFences(worker_id);
}

Status PoolControl::FenceGpus(const wire::FenceGpu& req, const std::string& by) {
  const WorkerEntry* w = scheduler_.registry().Find(req.worker_id);
  const std::vector<wire::GpuInfo> gpus = w != nullptr ? w->info.gpus : std::vector<wire::GpuInfo>{};
  COUPLER_ASSIGN_OR_RETURN(std::vector<store::GpuHealthRecord> records,
                           gpu_fences_.Decide(req, by, gpus, WallClockMs()));
  // On disk before it counts: a fence the admin was told holds must hold after a restart.
  COUPLER_RETURN_IF_ERROR(ledger_.store().PutGpuHealth(records));
  gpu_fences_.Apply(records);
  SyncFences(req.worker_id);
  std::string list;
  for (const store::GpuHealthRecord& r : records) list += (list.empty() ? "" : ", ") + std::to_string(r.gpu);
  if (req.fence) {
    Logger("coordinator")->warn("worker {} GPU(s) {} fenced by admin '{}': {}", req.worker_id, list,
                                by, req.reason);
  } else {
    Logger("coordinator")->warn("worker {} GPU(s) {} cleared by admin '{}': work goes to them "
                                "again", req.worker_id, list, by);
  }
  return Status::Ok();
}

Status PoolControl::RestoreGpuFences() {
  COUPLER_ASSIGN_OR_RETURN(std::vector<store::GpuHealthRecord> records,
                           ledger_.store().LoadGpuHealth());
  gpu_fences_.Restore(records);
  size_t fenced = 0;
  for (const store::GpuHealthRecord& r : records) fenced += r.fence.empty() ? 0 : 1;
  if (fenced > 0) {
    Logger("coordinator")->warn("{} GPU(s) fenced (coupler workers lists them; coupler worker "
                                "clear-gpu lifts a fence)", fenced);
  }
  return Status::Ok();
}

void PoolControl::AppendFenceWarnings(std::vector<std::string>& warnings) const {
  for (const auto& [id, w] : scheduler_.registry().workers()) {
    if (w.gone() || w.fenced_gpus.empty()) continue;
    for (const wire::GpuFence& f : gpu_fences_.Of(id)) {
      warnings.push_back(fmt::format("worker {} GPU {} is fenced ({}): no work goes to it until "
                                     "`coupler worker clear-gpu {} --gpu {}`",
                                     id, f.index, f.reason, id, f.index));
    }
  }
}

}  // namespace coupler::coordinator
