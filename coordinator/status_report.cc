#include "coordinator/status_report.h"

#include <algorithm>

#include "coordinator/placement/placement.h"
#include "coordinator/placement/pool_advice.h"

namespace coupler::coordinator {

wire::JobStatus ReportJob(const JobState& job, const WorkerRegistry& registry,
                          const GangReservations& gangs, std::optional<uint32_t> job_index) {
  wire::JobStatus s;
  s.id = job.id();
  s.name = job.graph().name;
  s.state = std::string(JobPhaseName(job.phase()));
  s.tasks_total = job.table().size();
  s.tasks_done = job.done();
  s.tasks_running = job.running();
  s.tasks_failed = job.failed();
  s.tasks_queued = job.finished() ? 0 : s.tasks_total - s.tasks_done - s.tasks_running - s.tasks_failed;
  s.attempts = job.total_attempts();
  s.error = job.error();
  s.devices = job.devices();
  s.gpu_fallbacks = job.gpu_fallbacks();
  s.submitted_ms = job.submitted_ms();
  s.finished_ms = job.finished_ms();
  s.submitted_by = job.submitted_by();
  s.workdir = job.graph().workdir;
  for (const auto& [id, refusal] : job.refused_hosts()) s.refused_hosts.push_back(refusal);
  const auto& plan = job.plan();
  std::vector<const Labels*> alive;
  for (const auto& [id, w] : registry.workers()) {
    if (w.state == WorkerState::kAlive) alive.push_back(&w.info.labels);
  }
  for (size_t p = 0; p < plan.nodes.size(); ++p) {
    wire::NodeStatus n;
    n.id = plan.nodes[p].id;
    if (plan.nodes[p].coupling == job::Coupling::kTight) {
      n.ranks = static_cast<uint32_t>(plan.nodes[p].ranks);
      const uint64_t task = job.table().first_task(p);
      // One entry per host: several of its workers may hold ranks of the gang.
      for (std::string& h : job.gang_hosts(task)) {
        if (std::find(n.hosts.begin(), n.hosts.end(), h) == n.hosts.end()) n.hosts.push_back(std::move(h));
      }
      if (job_index && job.task_state(task) == TaskState::kReady) {
        n.reason = gangs.Reason({*job_index, task});
      }
    }
    if (!job.required_labels(p).empty() && !job.finished() && job.node_has_ready(p)) {
      // Says more than a gang's "0 alive workers have 0 slots": which labels are missing.
      std::string unmatched = UnmatchedReason(job.required_labels(p), alive);
      if (!unmatched.empty()) n.reason = std::move(unmatched);
    }
    if (!job.refused_hosts().empty() && !job.finished() && job.node_has_ready(p)) {
      bool any_takes = false;
      for (const auto& [id, w] : registry.workers()) {
        any_takes |= w.state == WorkerState::kAlive && !job.Refuses(id);
      }
      if (!any_takes) {
        n.reason = "waiting: every alive worker refused the job (its workdir " + job.graph().workdir +
                   " is not visible there; coupler needs a shared filesystem)";
      }
    }
    n.tasks_total = job.table().task_count(p);
    n.tasks_done = job.node_done(p);
    n.attempts = job.node_attempts(p);
    n.error = job.node_error(p);
    if (!n.error.empty()) {
      n.state = "failed";
    } else if (n.tasks_done == n.tasks_total) {
      n.state = "done";
    } else if (job.phase() == JobPhase::kCancelled) {
      n.state = "cancelled";
    } else {
      n.state = job.node_released(p) ? (n.attempts > 0 ? "running" : "ready") : "pending";
    }
    s.nodes.push_back(std::move(n));
  }
  return s;
}

void ReportPool(const std::vector<std::unique_ptr<JobState>>& jobs,
                const WorkerRegistry& registry, const GangReservations& gangs,
                wire::CoordinatorStats& stats) {
  QueueDepth q;
  for (const auto& job : jobs) {
    if (job->finished()) continue;
    const auto [cpu, gpu] = job->ReadyLooseByHardware();
    q.cpu_tasks += cpu;
    q.gpu_tasks += gpu;
    for (const uint64_t t : job->ReadyGangs()) {
      q.gang_ranks += static_cast<uint64_t>(job->ranks(job->table().Describe(t).plan_node));
    }
  }
  uint32_t alive = 0;
  uint64_t slots = 0;
  uint64_t in_use = 0;
  for (const auto& [id, w] : registry.workers()) {
    if (w.state != WorkerState::kAlive) continue;
    ++alive;
    slots += w.info.slots;
    // Held slots are not counted: the waiting gang's ranks already are.
    in_use += std::min<uint64_t>(w.info.slots, w.inflight.size() + w.gang_ranks);
  }
  stats.queued_cpu_tasks = q.cpu_tasks;
  stats.queued_gpu_tasks = q.gpu_tasks;
  stats.queued_gang_ranks = q.gang_ranks;
  stats.recommended_workers = RecommendWorkers(q, in_use, alive, slots);
  stats.longest_partial_hold_ms = static_cast<uint64_t>(gangs.longest_partial_hold_ms());
}

std::vector<wire::WorkerStatus> ReportWorkers(const WorkerRegistry& registry, int64_t now_ms) {
  std::vector<wire::WorkerStatus> out;
  for (const auto& [id, w] : registry.workers()) {
    wire::WorkerStatus s;
    s.id = id;
    s.host = w.info.host;
    s.address = w.info.address;
    s.slots = w.info.slots;
    s.running = static_cast<uint32_t>(w.inflight.size()) + w.gang_ranks;
    s.state = std::string(WorkerStateName(w.state));
    if (w.state == WorkerState::kAlive && registry.Silent(w, now_ms)) s.state = "silent";
    s.gpus = w.info.gpus;
    s.labels = w.info.labels;
    s.cpus = w.info.cpus;
    s.memory_bytes = w.info.memory_bytes;
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace coupler::coordinator
