// JobState at and after its end: cancelled, compacted to its summary once nothing needs it in
// full, and run again in place by `coupler retry`.
#include "coordinator/job_state.h"

#include <algorithm>
#include <utility>

#include "runtime/check.h"

namespace coupler::coordinator {

void JobState::Cancel() {
  if (finished()) return;
  phase_ = JobPhase::kCancelled;
  error_ = "cancelled";
  queues_.ClearQueues();
  backing_off_.clear();
  ForgetRunning();
}

namespace {

// Frees a container's memory (clear() keeps the capacity).
template <typename T>
void FreeAll(T& c) {
  T().swap(c);
}

}  // namespace

void JobState::Compact(wire::JobStatus summary) {
  COUPLER_CHECK(finished() && running_ == 0) << "job " << id_ << " is not finished";
  summary_ = std::move(summary);
  specs_.reset();  // before the graph and plan it borrows
  // What the event loop still reads of a finished job: where its run directory is.
  job::JobGraph light;
  light.name = std::move(graph_.name);
  light.workdir = std::move(graph_.workdir);
  light.workdir_root = std::move(graph_.workdir_root);
  light.run_dir = std::move(graph_.run_dir);
  light.reuse = graph_.reuse;
  light.source_file = std::move(graph_.source_file);
  light.base_dir = std::move(graph_.base_dir);
  light.priority = graph_.priority;
  // Moved out, not assigned over: assigning a short string keeps the long one's buffer (a
  // 16 MiB description would stay).
  job::JobGraph old = std::exchange(graph_, std::move(light));
  plan::Plan old_plan = std::exchange(plan_, plan::Plan());
  table_ = TaskTable(plan_);
  FreeAll(state_);
  FreeAll(attempts_);
  FreeAll(unreported_losses_);
  FreeAll(attempt_base_);
  FreeAll(facts_.node_keys);
  FreeAll(facts_.reused_runs);
  FreeAll(deps_left_);
  FreeAll(node_done_);
  FreeAll(node_maps_done_);
  FreeAll(node_attempts_);
  FreeAll(fused_next_);
  FreeAll(fused_head_);
  FreeAll(fused_nodes_);
  fused_ids_.clear();
  FreeAll(node_running_);
  FreeAll(node_error_);
  FreeAll(readers_);
  queues_.Free();
  FreeAll(facts_.gang_hosts);
  FreeAll(backing_off_);
  FreeAll(tried_on_);
}

void JobState::Retry() {
  COUPLER_CHECK(phase_ != JobPhase::kSucceeded) << "job " << id_;
  COUPLER_CHECK(!compacted()) << "job " << id_ << " was compacted: rebuild it from the store";
  compact_wanted_ = false;
  queues_.ClearQueues();
  backing_off_.clear();  // a retry starts every unfinished task afresh, on any worker
  tried_on_.clear();
  ForgetRunning();
  failed_ = 0;
  error_.clear();
  for (uint64_t t = 0; t < table_.size(); ++t) {
    if (state_[t] == static_cast<uint8_t>(TaskState::kDone)) continue;
    SetState(t, TaskState::kBlocked);
    attempt_base_[t] = attempts_[t];
    unreported_losses_[t] = 0;
  }
  const size_t n = plan_.nodes.size();
  auto node_complete = [&](size_t p) { return node_done_[p] == table_.task_count(p); };
  for (size_t p = 0; p < n; ++p) {
    if (!node_complete(p)) node_error_[p].clear();
    std::vector<uint32_t> deps = table_.deps(p);
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
    deps_left_[p] = static_cast<uint32_t>(std::count_if(deps.begin(), deps.end(),
                                                        [&](uint32_t d) { return !node_complete(d); }));
  }
  phase_ = done_ == table_.size() ? JobPhase::kSucceeded : JobPhase::kRunning;
  facts_.finished_ms = 0;
  for (size_t p = 0; p < n; ++p) {
    if (deps_left_[p] != 0 || node_complete(p)) continue;
    Release(p);
    const plan::PlanNode& pn = plan_.nodes[p];
    // Its map tasks all done before the job stopped: only reduce tasks are left to run.
    if (pn.has_reduce && node_maps_done_[p] == static_cast<uint64_t>(pn.map_tasks)) {
      ReleaseReduces(p);
    }
  }
}

}  // namespace coupler::coordinator
