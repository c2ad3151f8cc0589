#include "coordinator/status_report.h"

#include <algorithm>

#include "coordinator/gpu_idle_watch.h"
#include "coordinator/placement/placement.h"
#include "coordinator/placement/pool_advice.h"

namespace coupler::coordinator {
namespace {

using job::NodePhase;

// The node whose tasks run plan node `p`'s fused chain (runtime/plan/fusion.h).
std::string FusedChainStart(const plan::Plan& plan, size_t p) {
  std::string id = plan.nodes[p].id;
  std::string after = plan.nodes[p].fused_after;
  for (size_t steps = 0; !after.empty() && steps < plan.nodes.size(); ++steps) {
    id = after;
    after.clear();
    for (const plan::PlanNode& n : plan.nodes) {
      if (n.id == id) after = n.fused_after;
    }
  }
  return id;
}


// The job's tasks sent to workers and waiting there unstarted, per plan node: the job knows
// only that they are handed out, their workers know whether they began.
std::vector<uint64_t> PrefetchedByNode(const JobState& job, const WorkerRegistry& registry,
                                       std::optional<uint32_t> job_index) {
  std::vector<uint64_t> out(job.plan().nodes.size(), 0);
  if (!job_index || job.finished()) return out;
  for (const auto& [id, w] : registry.workers()) {
    for (auto it = w.inflight.lower_bound({*job_index, 0});
         it != w.inflight.end() && it->first.first == *job_index; ++it) {
      if (!it->second.started) ++out[job.table().Describe(it->first.second).plan_node];
    }
  }
  return out;
}

}  // namespace

wire::JobStatus ReportJob(const JobState& job, const WorkerRegistry& registry,
                          const GangReservations& gangs, std::optional<uint32_t> job_index) {
  wire::JobStatus s;
  s.id = job.id();
  s.name = job.graph().name;
  s.state = job.phase();
  s.tasks_total = job.table().size();
  s.tasks_done = job.done();
  s.tasks_failed = job.failed();
  // Three counts, never mixed: queued (not handed out yet), prefetched (sent, waiting in a
  // worker's queue), running (started in a slot). A finished job has none of them.
  const std::vector<uint64_t> prefetched = PrefetchedByNode(job, registry, job_index);
  if (!job.finished()) {
    for (const uint64_t n : prefetched) s.tasks_prefetched += n;
    s.tasks_running = job.running() - std::min(job.running(), s.tasks_prefetched);
    s.tasks_queued = s.tasks_total - s.tasks_done - s.tasks_failed - job.running();
  }
  s.attempts = job.total_attempts();
  s.error = job.error();
  s.devices = job.facts().devices;
  s.gpu_fallbacks = job.facts().gpu_fallbacks;
  s.submitted_ms = job.facts().submitted_ms;
  s.finished_ms = job.facts().finished_ms;
  s.submitted_by = job.facts().submitted_by;
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
    n.op = plan.nodes[p].op;
    n.stage = static_cast<uint32_t>(plan.nodes[p].stage);
    n.deps = plan.nodes[p].deps;
    if (plan.nodes[p].coupling == job::Coupling::kTight) {
      n.ranks = static_cast<uint32_t>(plan.nodes[p].ranks);
      const uint64_t task = job.table().first_task(p);
      // One entry per host: several of its workers may hold ranks of the gang.
      for (std::string& h : job.facts().GangHosts(task)) {
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
    // A fused node's shards run in its chain's tasks: they are running or waiting when those are.
    const size_t runs_in = job.fused_head(p);
    n.tasks_prefetched = prefetched[runs_in];
    n.tasks_running = job.node_running(runs_in) - std::min(job.node_running(runs_in), prefetched[runs_in]);
    n.reused = job.facts().node_reused(p);
    n.reused_from = job.facts().reused_from(p);
    if (!n.error.empty()) {
      n.state = NodePhase::kFailed;
    } else if (n.tasks_done == n.tasks_total) {
      n.state = NodePhase::kDone;
    } else if (job.phase() == JobPhase::kCancelled) {
      n.state = NodePhase::kCancelled;
    } else {
      n.state = !job.node_released(p) ? NodePhase::kPending
                : n.attempts > 0      ? NodePhase::kRunning
                                      : NodePhase::kReady;
      // Fused: never released on its own, running as soon as its chain is.
      if (runs_in != p && job.node_running(runs_in) > 0) n.state = NodePhase::kRunning;
    }
    if (!plan.nodes[p].fused_after.empty() && n.state != NodePhase::kDone && n.reason.empty()) {
      // Its tasks never queue: each runs inside the chain's first node's task for its shard.
      n.reason = "fused: runs in the tasks of node '" + FusedChainStart(plan, p) + "'";
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
    if (!job) continue;  // evicted
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
    if (w.gone()) continue;
    const uint32_t started = w.started();
    stats.running_tasks += started;
    stats.prefetched_tasks += w.inflight.size() - started;
    if (w.state != WorkerState::kAlive) continue;
    ++alive;
    slots += w.info.slots;
    // Held slots are not counted: the waiting gang's ranks already are.
    in_use += std::min<uint64_t>(w.info.slots, started + w.gang_ranks);
    // Prefetched tasks wait for a slot as queued ones do: a worker holding more than its
    // slots run is backlog the advice must see.
    q.prefetched_tasks += w.inflight.size() - started;
  }
  stats.queued_cpu_tasks = q.cpu_tasks;
  stats.queued_gpu_tasks = q.gpu_tasks;
  stats.queued_gang_ranks = q.gang_ranks;
  stats.recommended_workers = RecommendWorkers(q, in_use, alive, slots);
  stats.longest_partial_hold_ms = static_cast<uint64_t>(gangs.longest_partial_hold_ms());
  AppendGpuWarnings(registry, stats.warnings);
}

std::vector<wire::WorkerStatus> ReportWorkers(const WorkerRegistry& registry, int64_t now_ms) {
  std::vector<wire::WorkerStatus> out;
  for (const auto& [id, w] : registry.workers()) {
    wire::WorkerStatus s;
    s.id = id;
    s.host = w.info.host;
    s.address = w.info.address;
    s.slots = w.info.slots;
    s.running = w.started() + w.gang_ranks;
    s.prefetched = w.prefetched();
    s.tasks_done = w.tasks_done;
    s.state = w.state == WorkerState::kAlive && registry.Silent(w, now_ms) ? WorkerState::kSilent
                                                                            : w.state;
    // After an outage its timeout is stretched into the future (worker_registry.cc).
    s.heard_ms_ago = static_cast<uint64_t>(std::max<int64_t>(0, now_ms - w.last_heard_ms));
    s.gpus = w.info.gpus;
    s.labels = w.info.labels;
    s.cpus = w.info.cpus;
    s.memory_bytes = w.info.memory_bytes;
    s.protocol_version = w.info.protocol_version;
    ReportGpus(w, s);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace coupler::coordinator
