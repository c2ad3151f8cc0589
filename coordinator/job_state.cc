#include "coordinator/job_state.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include <fmt/format.h>

#include "runtime/check.h"
#include "runtime/plan/fusion.h"

namespace coupler::coordinator {

JobState::JobState(std::string id, job::JobGraph graph, plan::Plan plan, DatasetListing datasets)
    : id_(std::move(id)),
      graph_(std::move(graph)),
      plan_(std::move(plan)),
      table_(plan_),
      specs_(std::in_place, graph_, plan_, std::move(datasets)) {
  const size_t n = plan_.nodes.size();
  state_.assign(table_.size(), static_cast<uint8_t>(TaskState::kBlocked));
  attempts_.assign(table_.size(), 0);
  unreported_losses_.assign(table_.size(), 0);
  attempt_base_.assign(table_.size(), 0);
  facts_.reused_runs.resize(n);
  deps_left_.resize(n);
  node_done_.assign(n, 0);
  node_maps_done_.assign(n, 0);
  node_attempts_.assign(n, 0);
  node_running_.assign(n, 0);
  node_error_.resize(n);
  readers_.resize(n);
  fused_next_ = plan::FusedNext(plan_);
  fused_head_.resize(n);
  for (size_t p = 0; p < n; ++p) fused_head_[p] = p;
  for (size_t p = 0; p < n; ++p) {
    if (!plan_.nodes[p].fused_after.empty()) continue;
    for (size_t q = fused_next_[p]; q != SIZE_MAX && q != p; q = fused_next_[q]) {
      fused_head_[q] = p;
      fused_nodes_.push_back(q);
      fused_ids_[p].push_back(plan_.nodes[q].id);
    }
  }
  for (size_t p = 0; p < n; ++p) {
    std::vector<uint32_t> deps = table_.deps(p);
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());  // inputs: [a, a]
    deps_left_[p] = static_cast<uint32_t>(deps.size());
    for (uint32_t d : deps) readers_[d].push_back(static_cast<uint32_t>(p));
  }
  std::vector<ReadyQueues::Route> routes(n);
  for (size_t p = 0; p < n; ++p) routes[p] = RouteOf(p);
  queues_ = ReadyQueues(std::move(routes));
  for (size_t p = 0; p < n; ++p) {
    if (deps_left_[p] == 0) Release(p);
  }
}

ReadyQueues::Route JobState::RouteOf(size_t p) const {
  using Count = ReadyQueues::Count;
  using Queue = ReadyQueues::Queue;
  ReadyQueues::Route r;  // a gang's tasks (TaskKind::kGang) wait in the gang queue whatever it says
  // A node with `requires` or a GPU share has a queue of its own: a worker's labels and room
  // are checked once per node, not once per task, and a share that does not fit now holds up
  // only its own node. Its tasks count as GPU work when the node asks for GPUs or a share.
  if (!required_labels(p).empty() || gpu_share(p) > 0) {
    const Count c = gpu_share(p) > 0 || wants_gpus(p) ? Count::kGpu : Count::kCpu;
    r.map_queue = r.reduce_queue = Queue::kNode;
    r.map_count = r.reduce_count = c;
    return r;
  }
  // Otherwise the shared queues: whole-GPU nodes' map tasks in the GPU one; reduces never.
  if (wants_gpus(p)) {
    r.map_queue = Queue::kGpu;
    r.map_count = Count::kGpu;
  }
  return r;
}

int JobState::MaxAttempts(size_t plan_node) const {
  return 1 + graph_.nodes[plan_.nodes[plan_node].node_index].retries;
}

void JobState::Release(size_t p) {
  // A node fused after another runs inside that node's tasks, shard by shard (Complete): its
  // own tasks are never queued.
  if (!plan_.nodes[p].fused_after.empty()) return;
  const uint64_t first = table_.first_task(p);
  const uint64_t count = table_.task_count(p);
  const bool gang = plan_.nodes[p].coupling == job::Coupling::kTight;
  const TaskKind kind = gang ? TaskKind::kGang : TaskKind::kMap;
  auto& queue = queues_.QueueOf(p, kind);
  // Reduce tasks wait for the node's map tasks, so they are released by ReleaseReduces().
  const uint64_t releasable = count - static_cast<uint64_t>(plan_.nodes[p].reduce_tasks());
  uint64_t released = 0;
  for (uint64_t t = first; t < first + releasable; ++t) {
    if (state_[t] != static_cast<uint8_t>(TaskState::kBlocked)) continue;  // restored as done
    state_[t] = static_cast<uint8_t>(TaskState::kReady);  // counted below, all at once
    queue.push_back(t);
    ++released;
  }
  queues_.Add(p, kind, static_cast<int64_t>(released));
  if (count == 0) NodeFinished(p);
}

void JobState::ReleaseReduces(size_t p) {
  const uint64_t end = table_.first_task(p) + table_.task_count(p);
  const uint64_t first = end - static_cast<uint64_t>(plan_.nodes[p].reduce_tasks());
  auto& queue = queues_.QueueOf(p, TaskKind::kReduce);
  uint64_t released = 0;
  for (uint64_t t = first; t < end; ++t) {
    if (state_[t] != static_cast<uint8_t>(TaskState::kBlocked)) continue;  // restored as done
    state_[t] = static_cast<uint8_t>(TaskState::kReady);  // counted below, all at once
    queue.push_back(t);
    ++released;
  }
  queues_.Add(p, TaskKind::kReduce, static_cast<int64_t>(released));
}

bool JobState::Admits(size_t p, const Taker& taker) const {
  static const Labels kNone;
  if (!LabelsMatch(required_labels(p), taker.labels != nullptr ? *taker.labels : kNone)) {
    return false;
  }
  if (!taker.has_gpus && wants_gpus(p)) return false;
  const uint64_t share = gpu_share(p);
  return share == 0 || !taker.share_fits || taker.share_fits(share);
}

bool JobState::HasReadyFor(const Taker& taker) const {
  if (finished()) return false;
  if (!queues_.cpu().empty() || (taker.has_gpus && !queues_.gpu().empty())) return true;
  for (const auto& [p, queue] : queues_.by_node()) {
    if (!queue.empty() && Admits(p, taker)) return true;
  }
  return false;
}

void JobState::SetState(uint64_t t, const TaskRef& ref, TaskState s) {
  const bool was_ready = state_[t] == static_cast<uint8_t>(TaskState::kReady);
  const bool is_ready = s == TaskState::kReady;
  state_[t] = static_cast<uint8_t>(s);
  if (was_ready == is_ready) return;
  queues_.Add(ref.plan_node, ref.kind, is_ready ? 1 : -1);
}

void JobState::SetState(uint64_t t, TaskState s) {
  // Describe only when the ready count changes: Retry() sets every unfinished task of a job,
  // and a binary search over plan nodes per task is 10M searches on the loop for a 10M job.
  const bool was_ready = state_[t] == static_cast<uint8_t>(TaskState::kReady);
  if (was_ready == (s == TaskState::kReady)) {
    state_[t] = static_cast<uint8_t>(s);
    return;
  }
  SetState(t, table_.Describe(t), s);
}

std::pair<uint64_t, uint64_t> JobState::ReadyLooseByHardware() const {
  if (finished()) return {0, 0};
  // Kept counts, not a walk of the queues: every status reply carries these, and a walk of a
  // 10M-task job's queues took milliseconds of the loop each time. Retries backing off are
  // ready but queued nowhere yet; they are few.
  std::pair<uint64_t, uint64_t> n = queues_.loose();
  std::vector<uint64_t> waiting;
  for (const auto& [at, t] : backing_off_) {
    if (state_[t] == static_cast<uint8_t>(TaskState::kReady)) waiting.push_back(t);
  }
  std::sort(waiting.begin(), waiting.end());
  waiting.erase(std::unique(waiting.begin(), waiting.end()), waiting.end());
  for (const uint64_t t : waiting) {
    const TaskRef ref = table_.Describe(t);
    const ReadyQueues::Count c = queues_.CountOf(ref.plan_node, ref.kind);
    if (c == ReadyQueues::Count::kGang) continue;
    (c == ReadyQueues::Count::kGpu ? n.second : n.first) -= 1;
  }
  return n;
}

std::optional<uint64_t> JobState::TakeReady(const Taker& taker) {
  if (finished()) return std::nullopt;
  // Constrained nodes first: few workers can take them, and this one can.
  for (auto& [p, queue] : queues_.by_node()) {
    if (queue.empty() || !Admits(p, taker)) continue;
    if (std::optional<uint64_t> t = TakeFrom(queue, taker)) return t;
  }
  for (auto* queue : {taker.has_gpus ? &queues_.gpu() : nullptr, &queues_.cpu()}) {
    if (queue == nullptr) continue;
    if (std::optional<uint64_t> t = TakeFrom(*queue, taker)) return t;
  }
  return std::nullopt;
}

std::optional<uint64_t> JobState::TakeFrom(std::deque<uint64_t>& queue, const Taker& taker) {
  // Only retried tasks are ever passed over, and they sit at the front: this scan is short.
  std::vector<uint64_t> passed;
  std::optional<uint64_t> taken;
  while (!queue.empty()) {
    const uint64_t t = queue.front();
    queue.pop_front();
    if (state_[t] != static_cast<uint8_t>(TaskState::kReady)) continue;  // stale entry
    if (PrefersElsewhere(t, taker)) {
      passed.push_back(t);
      continue;
    }
    taken = t;
    break;
  }
  for (auto it = passed.rbegin(); it != passed.rend(); ++it) queue.push_front(*it);
  if (taken) MarkRunning(*taken);
  return taken;
}

bool JobState::PrefersElsewhere(uint64_t t, const Taker& taker) const {
  if (taker.worker_id == nullptr || !taker.elsewhere) return false;
  auto it = tried_on_.find(t);
  if (it == tried_on_.end()) return false;
  const std::vector<std::string>& tried = it->second;
  if (std::find(tried.begin(), tried.end(), *taker.worker_id) == tried.end()) return false;
  // It failed here: another worker that has not failed it takes it if one can now; else it
  // runs here after all (the only worker that may run it must not leave it waiting forever).
  return taker.elsewhere(*this, table_.Describe(t).plan_node, tried);
}

const std::vector<std::string>& JobState::tried_on(uint64_t t) const {
  static const std::vector<std::string> kNone;
  auto it = tried_on_.find(t);
  return it == tried_on_.end() ? kNone : it->second;
}

void JobState::MarkRunning(uint64_t t) {
  const TaskRef ref = table_.Describe(t);
  SetState(t, ref, TaskState::kRunning);
  if (attempts_[t] < 255) ++attempts_[t];
  const size_t p = ref.plan_node;
  ++node_attempts_[p];
  ++node_running_[p];
  ++total_attempts_;
  ++running_;
  if (phase_ == JobPhase::kQueued) phase_ = JobPhase::kRunning;
}

std::vector<uint64_t> JobState::ReadyGangs() const {
  std::vector<uint64_t> out;
  if (finished()) return out;
  for (const uint64_t t : queues_.gangs()) {
    if (state_[t] == static_cast<uint8_t>(TaskState::kReady) &&
        std::find(out.begin(), out.end(), t) == out.end()) {
      out.push_back(t);
    }
  }
  return out;
}

void JobState::StartGang(uint64_t t) {
  COUPLER_CHECK(state_[t] == static_cast<uint8_t>(TaskState::kReady)) << "gang task " << t;
  std::erase(queues_.gangs(), t);
  MarkRunning(t);
}

bool JobState::wants_gpus(size_t p) const {
  const plan::PlanNode& node = plan_.nodes[p];
  // A gang follows its op's hardware class (train: GPUs with a fast interconnect) even without
  // `resources.gpus`: its ranks go to GPU workers when the pool has any and run on CPUs
  // otherwise. Loose tasks leave the CPUs only when the node asks, since a CPU-only pool would
  // never run a loose task that needs a GPU.
  if (node.coupling == job::Coupling::kTight && node.hardware != ops::HardwareClass::kCpu) {
    return true;
  }
  return graph_.nodes[node.node_index].resources.gpus > 0;
}

uint64_t JobState::gpu_share(size_t p) const {
  return graph_.nodes[plan_.nodes[p].node_index].resources.gpu_memory;
}

bool JobState::Complete(uint64_t t) {
  if (finished() || state_[t] == static_cast<uint8_t>(TaskState::kDone) ||
      state_[t] == static_cast<uint8_t>(TaskState::kFailed)) {
    return false;
  }
  const TaskRef ref = table_.Describe(t);
  const size_t p = ref.plan_node;
  if (state_[t] == static_cast<uint8_t>(TaskState::kRunning)) EndRunning(p);
  SetState(t, ref, TaskState::kDone);
  tried_on_.erase(t);
  ++done_;
  ++node_done_[p];
  const plan::PlanNode& pn = plan_.nodes[p];
  if (ref.kind == TaskKind::kMap && pn.has_reduce &&
      ++node_maps_done_[p] == static_cast<uint64_t>(pn.map_tasks)) {
    ReleaseReduces(p);
  }
  if (node_done_[p] == table_.task_count(p)) NodeFinished(p);
  // The attempt that ran a fused chain's first node ran the same shard of the rest of it.
  if (ref.kind == TaskKind::kMap && fused_next_[p] != SIZE_MAX) {
    const size_t next = fused_next_[p];
    const uint64_t follower = table_.first_task(next) + static_cast<uint64_t>(ref.shard);
    attempts_[follower] = attempts_[t];
    Complete(follower);
  }
  if (done_ == table_.size()) phase_ = JobPhase::kSucceeded;
  return true;
}

void JobState::EndRunning(size_t p) {
  --running_;
  --node_running_[p];
}

void JobState::ForgetRunning() {
  running_ = 0;
  std::fill(node_running_.begin(), node_running_.end(), 0);
}

void JobState::NodeFinished(size_t p) {
  for (uint32_t r : readers_[p]) {
    if (--deps_left_[r] == 0) Release(r);
  }
}

void JobState::Fail(uint64_t t, const FailedAttempt& failure) {
  if (finished() || state_[t] == static_cast<uint8_t>(TaskState::kDone) ||
      state_[t] == static_cast<uint8_t>(TaskState::kFailed)) {
    return;
  }
  if (state_[t] != static_cast<uint8_t>(TaskState::kRunning)) return;  // a stale duplicate
  const TaskRef ref = table_.Describe(t);
  const size_t p = ref.plan_node;
  EndRunning(p);
  if (!failure.worker_id.empty()) {
    std::vector<std::string>& tried = tried_on_[t];
    if (std::find(tried.begin(), tried.end(), failure.worker_id) == tried.end()) {
      tried.push_back(failure.worker_id);
    }
  }
  if (failure.retryable && attempts_[t] - attempt_base_[t] < MaxAttempts(p)) {
    if (WaitsForMaps(t)) {
      SetState(t, ref, TaskState::kBlocked);  // ReleaseReduces queues it
    } else if (failure.retry_at_ms > 0) {
      // Ready, but in no queue until its back-off ends: nothing polls it meanwhile.
      SetState(t, ref, TaskState::kReady);
      backing_off_.emplace(failure.retry_at_ms, t);
    } else {
      ReadyAgain(t);
    }
    return;
  }
  SetState(t, ref, TaskState::kFailed);
  ++failed_;
  // A fused chain's failure is the failing node's, and its task of the shard is named.
  size_t shown = p;
  uint64_t shown_task = t;
  if (!failure.fused_node.empty() && ref.kind == TaskKind::kMap) {
    for (size_t q = fused_next_[p]; q != SIZE_MAX && q != p; q = fused_next_[q]) {
      if (plan_.nodes[q].id != failure.fused_node) continue;
      shown = q;
      shown_task = table_.first_task(q) + static_cast<uint64_t>(ref.shard);
      break;
    }
  }
  const std::string what =
      ref.kind == TaskKind::kMap ? fmt::format("task {} (shard {})", shown_task, ref.shard)
      : ref.kind == TaskKind::kReduce && plan_.nodes[p].reduce_tasks() > 1
          ? fmt::format("task {} (reduce of partition {})", t, ref.shard)
          : fmt::format("task {} ({})", t, ref.kind == TaskKind::kReduce ? "reduce" : "gang");
  // Said when retries were left: a user who wrote `retries: 3` sees why there was one attempt.
  const bool cut_short = !failure.retryable && attempts_[t] < MaxAttempts(p);
  node_error_[shown] = fmt::format("{} failed after {} attempt{}{}: {}", what, attempts_[t],
                               attempts_[t] == 1 ? "" : "s",
                               cut_short ? " (not retried: the same input fails the same way)" : "",
                               failure.error);
  error_ = fmt::format("node '{}': {}", plan_.nodes[shown].id, node_error_[shown]);
  phase_ = JobPhase::kFailed;
  ForgetRunning();
}

void JobState::ReleaseDueRetries(int64_t now_ms) {
  if (finished()) return;
  // Earliest due first; each goes to the front of its queue, so release the latest first to
  // leave the earliest at the very front.
  const auto end = backing_off_.upper_bound(now_ms);
  std::vector<uint64_t> due;
  for (auto it = backing_off_.begin(); it != end; ++it) due.push_back(it->second);
  backing_off_.erase(backing_off_.begin(), end);
  for (auto it = due.rbegin(); it != due.rend(); ++it) {
    if (state_[*it] == static_cast<uint8_t>(TaskState::kReady)) ReadyAgain(*it);
  }
}

bool JobState::WaitsForMaps(uint64_t t) const {
  const TaskRef ref = table_.Describe(t);
  const plan::PlanNode& pn = plan_.nodes[ref.plan_node];
  return ref.kind == TaskKind::kReduce && pn.has_reduce &&
         node_maps_done_[ref.plan_node] < static_cast<uint64_t>(pn.map_tasks);
}

std::vector<uint64_t> JobState::ReopenLostInputs(uint64_t reduce,
                                                 const std::vector<uint32_t>& lost_inputs) {
  std::vector<uint64_t> reopened;
  if (finished() || reduce >= table_.size() || lost_inputs.empty()) return reopened;
  const TaskRef ref = table_.Describe(reduce);
  const size_t p = ref.plan_node;
  const plan::PlanNode& pn = plan_.nodes[p];
  // A fused chain's map tasks run several nodes at once: not reopened one node at a time.
  if (ref.kind != TaskKind::kReduce || !pn.has_reduce || pn.map_tasks <= 0 ||
      fused_next_[p] != SIZE_MAX || fused_head_[p] != p) {
    return reopened;
  }
  for (const uint32_t input : lost_inputs) {
    // Every reduce reads its inputs in map order (a sort: its sorted shards, then its samples),
    // so input i was written by map task i modulo the node's map tasks (task_specs.cc).
    const uint64_t map = table_.first_task(p) + input % static_cast<uint64_t>(pn.map_tasks);
    if (state_[map] != static_cast<uint8_t>(TaskState::kDone)) continue;  // reopened already
    SetState(map, TaskState::kReady);
    --done_;
    --node_done_[p];
    --node_maps_done_[p];
    // Its last attempt succeeded: the one that rebuilds its output is not charged.
    if (attempt_base_[map] < 255) ++attempt_base_[map];
    ReadyAgain(map);
    reopened.push_back(map);
  }
  return reopened;
}

void JobState::ReadyAgain(uint64_t t) {
  const TaskRef ref = table_.Describe(t);
  if (WaitsForMaps(t)) {
    SetState(t, ref, TaskState::kBlocked);  // ReleaseReduces queues it
    return;
  }
  SetState(t, ref, TaskState::kReady);
  // To the front: a retried task holds back its whole node, so it goes next.
  queues_.QueueOf(ref.plan_node, ref.kind).push_front(t);
}

void JobState::MarkReused(size_t p, std::string from) {
  facts_.reused_runs[p] = std::move(from);
  const uint64_t first = table_.first_task(p);
  for (uint64_t t = first; t < first + table_.task_count(p); ++t) {
    if (state_[t] != static_cast<uint8_t>(TaskState::kDone)) RestoreDone(t, 0);
  }
}

wire::TaskSpec JobState::MakeSpec(uint64_t t) const {
  wire::TaskSpec spec = specs_->Make(table_.Describe(t));
  spec.job_id = id_;
  spec.task_id = t;
  spec.attempt = attempts_[t] > 0 ? attempts_[t] - 1u : 0u;
  spec.workdir_token = workdir_token_;
  size_t p = table_.Describe(t).plan_node;
  for (wire::FusedStep& step : spec.fused) {
    p = fused_next_[p];
    step.task_id = table_.first_task(p) + static_cast<uint64_t>(spec.shard_index);
  }
  return spec;
}

}  // namespace coupler::coordinator
