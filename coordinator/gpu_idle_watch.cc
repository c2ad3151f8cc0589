#include "coordinator/gpu_idle_watch.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "coordinator/scheduler.h"
#include "coordinator/worker_registry.h"
#include "runtime/logging.h"

namespace coupler::coordinator {
namespace {

bool AllIdle(const std::vector<wire::GpuUsage>& samples) {
  return std::all_of(samples.begin(), samples.end(), [](const wire::GpuUsage& g) {
    return g.utilization_percent < kIdleBusyPercent;
  });
}

// The node asks for whole GPUs (resources.gpus) or a GPU share (resources.gpu_memory). A gang
// of a GPU op that asks for neither may still be placed on GPU workers (JobState::wants_gpus),
// but what its command runs on is its own business: it is not counted.
bool AsksForGpus(const JobState& job, size_t plan_node) {
  const size_t node = job.plan().nodes[plan_node].node_index;
  return job.graph().nodes[node].resources.gpus > 0 || job.gpu_share(plan_node) > 0;
}

// Why a standing warning ended, for the log.
std::string ClearedBecause(const GpuActivity& a) {
  if (a.samples.empty()) return "its GPUs are no longer sampled (" + a.sampling + ")";
  if (a.gpu_tasks == 0) return "it runs no GPU task now";
  return "its GPUs are busy again";
}

}  // namespace

GpuWarningChange ObserveGpus(GpuActivity& activity, const std::string& worker_id,
                             std::vector<wire::GpuUsage> samples, std::string sampling,
                             uint32_t gpu_tasks, int64_t now_ms) {
  activity.samples = std::move(samples);
  activity.sampling = std::move(sampling);
  activity.gpu_tasks = gpu_tasks;
  const bool idle = !activity.samples.empty() && gpu_tasks > 0 && AllIdle(activity.samples);
  if (!idle) {
    activity.idle_since_ms.reset();
  } else if (!activity.idle_since_ms) {
    activity.idle_since_ms = now_ms;
  }
  const bool was_warning = !activity.warning.empty();
  const bool warns = activity.idle_since_ms && now_ms - *activity.idle_since_ms >= kIdleWindowMs;
  activity.warning =
      warns ? fmt::format("worker {} holds {} GPU task(s) but its GPUs were under {}% busy for "
                          "{} s: the tasks probably run on the CPU",
                          worker_id, gpu_tasks, kIdleBusyPercent,
                          (now_ms - *activity.idle_since_ms) / 1000)
            : "";
  if (warns && !was_warning) return GpuWarningChange::kRaised;
  if (!warns && was_warning) return GpuWarningChange::kCleared;
  return GpuWarningChange::kNone;
}

uint32_t GpuTasksRunning(const Scheduler& scheduler, const std::string& worker_id,
                         const WorkerEntry& worker) {
  const auto& jobs = scheduler.jobs();
  uint32_t count = 0;
  for (const auto& [key, held] : worker.inflight) {
    // Only what it runs: a prefetched task has not touched a GPU yet.
    if (!held.started || key.first >= jobs.size() || !jobs[key.first]) continue;
    const JobState& job = *jobs[key.first];
    const size_t p = job.table().Describe(key.second).plan_node;
    count += AsksForGpus(job, p) ? 1 : 0;
  }
  if (worker.gang_ranks == 0) return count;
  for (const auto& job : jobs) {
    if (!job || job->finished()) continue;
    const auto& nodes = job->plan().nodes;
    for (size_t p = 0; p < nodes.size(); ++p) {
      if (nodes[p].coupling != job::Coupling::kTight || !AsksForGpus(*job, p)) continue;
      const uint64_t first = job->table().first_task(p);
      for (uint64_t t = first; t < first + job->table().task_count(p); ++t) {
        if (job->task_state(t) != TaskState::kRunning) continue;
        const std::optional<Scheduler::GangView> gang = scheduler.FindRunningGang(job->id(), t);
        if (!gang) continue;
        for (const auto& [id, ranks] : gang->workers) count += id == worker_id ? ranks : 0;
      }
    }
  }
  return count;
}

void OnGpuHeartbeat(Scheduler& scheduler, const std::string& worker_id,
                    const wire::Heartbeat& beat, int64_t now_ms) {
  WorkerEntry* w = scheduler.registry().Find(worker_id);
  if (w == nullptr) return;
  const uint32_t gpu_tasks = !w->info.gpus.empty() ? GpuTasksRunning(scheduler, worker_id, *w) : 0;
  switch (ObserveGpus(w->gpu, worker_id, beat.gpus, beat.gpu_sampling, gpu_tasks, now_ms)) {
    case GpuWarningChange::kRaised:
      Logger("coordinator")->warn("{}", w->gpu.warning);
      break;
    case GpuWarningChange::kCleared:
      Logger("coordinator")->info("worker {}: the idle-GPU warning is cleared: {}", worker_id,
                                  ClearedBecause(w->gpu));
      break;
    case GpuWarningChange::kNone:
      break;
  }
}

void ReportGpus(const WorkerEntry& worker, wire::WorkerStatus& status) {
  // A worker that left (drained or lost): its last samples are history, not its GPUs' state.
  if (worker.gone()) {
    status.gpu_sampling = "not sampled: the worker left";
    return;
  }
  status.gpu_usage = worker.gpu.samples;
  status.gpu_sampling = worker.gpu.sampling;
  status.warning = worker.gpu.warning;
}

void AppendGpuWarnings(const WorkerRegistry& registry, std::vector<std::string>& warnings) {
  for (const auto& [id, w] : registry.workers()) {
    if (!w.gone() && !w.gpu.warning.empty()) warnings.push_back(w.gpu.warning);
  }
}

std::vector<GpuIdleState> GpuIdleStates(const WorkerRegistry& registry) {
  std::vector<GpuIdleState> out;
  for (const auto& [id, w] : registry.workers()) {
    // A gone worker's last samples are history, not its GPUs' state.
    if (w.gone()) continue;
    out.push_back({id, w.gpu.samples, w.gpu.sampling, w.gpu.gpu_tasks, !w.gpu.warning.empty()});
  }
  return out;
}

}  // namespace coupler::coordinator
