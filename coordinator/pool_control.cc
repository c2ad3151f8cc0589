#include "coordinator/pool_control.h"

#include <algorithm>

#include <fmt/format.h>

#include "coordinator/gpu_idle_watch.h"
#include "coordinator/job_intake.h"
#include "coordinator/operator_reason.h"
#include "coordinator/zap_handler.h"
#include "runtime/logging.h"
#include "runtime/wire/codec.h"
#include "runtime/wire/control_messages.h"

namespace coupler::coordinator {

PoolControl::PoolControl(Scheduler& scheduler, Ledger& ledger, LaunchRelay& launches,
                         int64_t dead_after_ms)
    : scheduler_(scheduler), ledger_(ledger), launches_(launches), dead_after_ms_(dead_after_ms) {}

bool PoolControl::OnMessage(const std::string& route, const std::string& user,
                            const wire::Message& msg, int64_t now_ms, Outbox& out) {
  if (const auto* reg = std::get_if<wire::RegisterWorker>(&msg)) {
    if (reg->worker_id.empty()) return false;
    OnRegister(route, user, *reg, now_ms, out);
    return true;
  }
  if (const auto* launch = std::get_if<wire::LaunchRequest>(&msg)) {
    // From a gang leader's launcher hook: a connection of its own, never registered.
    OnLaunchRequest(route, user, *launch, out);
    return true;
  }
  // Who sent it is the connection, never the ids inside the message.
  auto known = route_to_worker_.find(route);
  if (known == route_to_worker_.end() || !scheduler_.registry().Heard(known->second, now_ms)) {
    // A worker we do not know (we restarted, its connection was cut and made again, or it was
    // declared dead): it must register again. Results it sends meanwhile are not taken here:
    // it keeps them until acknowledged and sends them again after its registration, which
    // adopts their attempts if they are still its own. The others are of attempts already
    // given up on.
    if (const auto* result = std::get_if<wire::TaskResult>(&msg)) {
      for (const wire::TaskOutcome& o : result->outcomes) {
        if (!scheduler_.AwaitsAdoption(o.job_id, o.task_id, o.attempt)) ledger_.CountStale();
      }
    }
    out.ToRoute(route, wire::Encode(wire::RegisterAgain{
                           known == route_to_worker_.end()
                               ? "this connection has not registered (the coordinator restarted?)"
                               : "worker " + known->second + " was given up on: register again"}));
    return true;
  }
  const std::string& worker_id = known->second;
  if (const auto* beat = std::get_if<wire::Heartbeat>(&msg)) {
    if (scheduler_.OnHeartbeat(worker_id, *beat, now_ms)) {
      Logger("coordinator")->info("worker {} drained and left", worker_id);
    }
    OnGpuHeartbeat(scheduler_, worker_id, *beat, now_ms);
    ObserveGpuHealth(worker_id, *beat);
    if (beat->draining) NoteDrainingBeat(worker_id);
  } else if (const auto* result = std::get_if<wire::TaskResult>(&msg)) {
    OnResults(worker_id, *result);
    SweepLaunches(out);
  } else if (const auto* launched = std::get_if<wire::LaunchOutput>(&msg)) {
    OnLaunchOutput(worker_id, *launched, out);
  } else if (const auto* back = std::get_if<wire::Reclaimed>(&msg)) {
    // Asked back for idle slots elsewhere (Reclaim), or handed back unasked by a worker that
    // drains: either way never started there, so ready again under the same attempt.
    if (const auto taken = scheduler_.OnReclaimed(worker_id, back->released); !taken.empty()) {
      ledger_.Returned(worker_id, taken);
      const WorkerEntry* w = scheduler_.registry().Find(worker_id);
      const bool leaving = w != nullptr && w->state == WorkerState::kDraining;
      Logger("coordinator")->info("took {} queued task(s) back from worker {} {}", taken.size(),
                                  worker_id, leaving ? "as it drains" : "for idle slots");
    }
  } else {
    return false;
  }
  return true;
}

void PoolControl::OnRegister(const std::string& route, const std::string& user,
                             const wire::RegisterWorker& reg, int64_t now_ms, Outbox& out) {
  if (const store::BanRecord* ban = bans_.Find(reg.worker_id)) {
    ++registrations_refused_;
    Logger("coordinator")->warn("refused a registration as worker {} by key '{}': banned {}",
                                reg.worker_id, user, WorkerBans::Describe(*ban));
    out.ToRoute(route, wire::Encode(wire::ErrorFromStatus(
                           PermissionDenied(WorkerBans::RefusalMessage(*ban)),
                           wire::MessageType::kRegisterWorker)));
    return;
  }
  if (WorkerEntry* existing = scheduler_.registry().Find(reg.worker_id)) {
    if (existing->key_name != user) {
      // The id is bound to the key that first registered it: a peer with another key must not
      // take over its route or its tasks. Once that key has left the allow-list, though, the id
      // moves to the new one: that is how an operator rotates a worker's key.
      const bool old_key_listed = allow_lists_ == nullptr ||
                                  allow_lists_->HasName(kWorkersDomain, existing->key_name);
      if (old_key_listed) {
        ++registrations_refused_;
        Logger("coordinator")->warn("refused a registration as worker {} by key '{}': that id "
                                    "belongs to key '{}', still in authorized/workers/",
                                    reg.worker_id, user, existing->key_name);
        out.ToRoute(route, wire::Encode(wire::ErrorFromStatus(
                               PermissionDenied("worker id " + reg.worker_id +
                                                " is registered with another key ('" +
                                                existing->key_name +
                                                "'), which is still allowed; pick another --id, "
                                                "or remove that key from authorized/workers/ to "
                                                "move the id to this one"),
                               wire::MessageType::kRegisterWorker)));
        return;
      }
      Logger("coordinator")->info("worker {} moves from key '{}' (no longer in "
                                  "authorized/workers/) to key '{}'",
                                  reg.worker_id, existing->key_name, user);
    }
    route_to_worker_.erase(existing->route);
  }
  Registration joined = scheduler_.RegisterWorker(reg, now_ms, user);
  ledger_.Lost(joined.lost);
  WorkerEntry* w = scheduler_.registry().Find(reg.worker_id);
  w->key_name = user;
  w->route = route;
  SyncFences(reg.worker_id);  // a fence outlives the worker's process and the coordinator's
  route_to_worker_[route] = reg.worker_id;
  ledger_.WorkerJoined(reg);
  for (const wire::HeldAttempt& h : joined.adopted) ledger_.Adopted(h, reg.worker_id);
  for (const LostAttempt& a : joined.abandoned) {
    ledger_.Abandoned(a.job_id, a.task_id, a.attempt,
                      "sent before the coordinator restarted to worker " + reg.worker_id +
                          ", which registered again without it: the task runs again");
  }
  // Recorded as withdrawn, so a later restart replays them uncharged too.
  ledger_.Withdrawn(joined.undelivered,
                    "sent before the coordinator restarted to worker " + reg.worker_id +
                        ", which registered again without it and still holding what it did "
                        "get: it never arrived; the task runs again, not charged");
  Logger("coordinator")->info("worker {} joined from {} with {} slots, {} GPUs{}{}", reg.worker_id,
                              reg.host, reg.slots, reg.gpus.size(),
                              user.empty() ? "" : ", key " + user,
                              reg.holding.empty()
                                  ? std::string()
                                  : fmt::format("; of {} attempt(s) it holds, {} adopted, {} "
                                                "released", reg.holding.size(),
                                                joined.adopted.size(), joined.release.size()));
  out.ToWorker(reg.worker_id,
               wire::Encode(wire::Registered{reg.worker_id, std::move(joined.release)}));
}

void PoolControl::OnResults(const std::string& worker_id, const wire::TaskResult& result) {
  if (result.prefetch > 0) {
    if (WorkerEntry* w = scheduler_.registry().Find(worker_id)) w->info.prefetch = result.prefetch;
  }
  for (const wire::TaskOutcome& o : result.outcomes) {
    ledger_.Outcome(worker_id, o, scheduler_.OnOutcome(worker_id, o));
  }
}

void PoolControl::NoteDrainingBeat(const std::string& worker_id) {
  ledger_.WorkerDraining(worker_id, "worker");
  const WorkerEntry* w = scheduler_.registry().Find(worker_id);
  // Everything sent to it is reported (results travel before the beat on its one connection):
  // it holds nothing, so it is leaving.
  if (w == nullptr || !w->inflight.empty() || w->gang_ranks > 0 || w->held > 0) return;
  ledger_.WorkerDrained(worker_id);
}

size_t PoolControl::AwaitInFlight(const std::string& job_id, const store::TaskHistory& history,
                                  int64_t now_ms) {
  // Even with nothing recorded in flight: sends not yet recorded at the crash are adopted too.
  const std::vector<store::SentAttempt> in_flight = InFlightAttempts(history);
  const std::vector<std::pair<uint64_t, uint32_t>> abandoned =
      scheduler_.AwaitAdoption(job_id, in_flight, now_ms + AdoptionWaitMs(), now_ms);
  for (const auto& [task, attempt] : abandoned) {
    ledger_.Abandoned(job_id, task, attempt,
                      "sent before the coordinator restarted and cannot be taken back (a gang's "
                      "ranks, or not its task's latest attempt): the task runs again");
  }
  return in_flight.size() - abandoned.size();
}

int64_t PoolControl::AdoptionWaitMs() const {
  return std::max<int64_t>(2 * dead_after_ms_, 10'000);
}

void PoolControl::AbandonUnadopted(int64_t now_ms) {
  const std::vector<LostAttempt> abandoned = scheduler_.AbandonUnadopted(now_ms);
  if (abandoned.empty()) return;
  const std::string reason = fmt::format(
      "sent before the coordinator restarted, and no worker reported holding it within {} ms: "
      "the task runs again", AdoptionWaitMs());
  for (const LostAttempt& a : abandoned) ledger_.Abandoned(a.job_id, a.task_id, a.attempt, reason);
  Logger("coordinator")->warn("{} attempt(s) in flight before the restart were not reported by "
                              "any worker: their tasks run again", abandoned.size());
}

void PoolControl::Reap(int64_t now_ms, Outbox& out) {
  ReapSilentWorkers(now_ms);
  AbandonUnadopted(now_ms);
  SweepLaunches(out);
  // Queued work moves: what waits unstarted behind busy slots goes to idle ones.
  for (auto& [worker, attempts] : scheduler_.PlanReclaims()) {
    out.ToWorker(worker, wire::Encode(wire::Reclaim{std::move(attempts)}));
  }
}

void PoolControl::ReapSilentWorkers(int64_t now_ms) {
  // The scheduler returns only the attempts the reaped workers held: note who may go first.
  std::vector<std::string> silent;
  for (const auto& [id, w] : scheduler_.registry().workers()) {
    if (scheduler_.registry().Silent(w, now_ms)) silent.push_back(id);
  }
  const std::vector<LostAttempt> lost = scheduler_.ReapSilentWorkers(now_ms);
  for (const std::string& id : silent) {
    const WorkerEntry* w = scheduler_.registry().Find(id);
    if (w != nullptr && (w->state == WorkerState::kAlive || w->state == WorkerState::kDraining)) {
      continue;  // not given up on yet
    }
    ledger_.WorkerGone(id, static_cast<uint64_t>(std::count_if(
                               lost.begin(), lost.end(),
                               [&](const LostAttempt& l) { return l.worker_id == id; })));
  }
  ledger_.Lost(lost);
}

void PoolControl::Heartbeat(int64_t wall_ms, Outbox& out) {
  wire::Heartbeat beat;
  beat.sender_id = "coordinator";
  beat.sequence = ++heartbeat_seq_;
  beat.timestamp_ms = static_cast<uint64_t>(wall_ms);
  const std::string bytes = wire::Encode(beat);
  for (const auto& [id, w] : scheduler_.registry().workers()) {
    if (w.gone()) continue;
    if (w.fenced_gpus.empty()) {
      out.ToWorker(id, bytes);
      continue;
    }
    // Its fences ride on its beat: a worker starts nothing on those GPUs (worker/task_pool.h).
    wire::Heartbeat fenced = beat;
    fenced.fenced_gpus = w.fenced_gpus;
    out.ToWorker(id, wire::Encode(fenced));
  }
}

void PoolControl::AcknowledgeDurable(Outbox& out) {
  for (auto& [worker_id, attempts] : ledger_.TakeDurableAcks()) {
    out.ToWorker(worker_id, wire::Encode(wire::ResultAck{std::move(attempts)}));
  }
}

void PoolControl::Dispatch(int64_t now_ms, Outbox& out) {
  // Work finished now could not be made durable: hand out none until the store writes again.
  if (!ledger_.writable()) return;
  if (scheduler_.AwaitingHolders(now_ms)) return;
  // Gangs first: slots they hold must not go to loose tasks in the same round.
  for (auto& [leader, spec] : scheduler_.PlaceGangs(now_ms)) {
    std::string hosts;
    for (const std::string& h : spec.gang_hosts) hosts += (hosts.empty() ? "" : ",") + h;
    Logger("coordinator")->info("job {} node {}: gang of {} ranks on {}, led by {}", spec.job_id,
                                spec.node_id, spec.ranks, hosts, leader);
    spec.gang_token = launches_.IssueToken(spec.job_id, spec.task_id, spec.attempt);
    ledger_.GangSent(leader, spec);
    wire::TaskAssignment a;
    a.tasks.push_back(std::move(spec));
    out.ToWorker(leader, wire::Encode(a));
  }
  scheduler_.ReleaseDueRetries();  // back-offs that ended: their tasks may go out now
  if (!scheduler_.HasDispatchableWork()) return;
  for (auto& [id, tasks] : scheduler_.AssignBalanced()) {
    ledger_.Sent(id, tasks);
    wire::TaskAssignment a;
    a.tasks = std::move(tasks);
    out.ToWorker(id, wire::Encode(a));
  }
}

bool PoolControl::DrainForStop(Outbox& out) {
  bool left = true;
  std::vector<std::string> to_tell;
  for (const auto& [id, w] : scheduler_.registry().workers()) {
    if (w.gone()) continue;
    left = false;
    if (w.state == WorkerState::kAlive) to_tell.push_back(id);
  }
  for (const std::string& id : to_tell) {
    scheduler_.registry().SetDraining(id);
    ledger_.WorkerDraining(id, "stop");
    out.ToWorker(id, wire::Encode(wire::DrainWorker{id}));
  }
  return left;
}

bool PoolControl::Drain(const wire::DrainWorker& req, Outbox& out) {
  if (scheduler_.registry().Find(req.worker_id) == nullptr) return false;
  scheduler_.registry().SetDraining(req.worker_id);
  ledger_.WorkerDraining(req.worker_id, "admin");
  out.ToWorker(req.worker_id, wire::Encode(req));
  return true;
}

void PoolControl::Revoked(const std::string& route, const std::string& user, int64_t now_ms) {
  auto known = route_to_worker_.find(route);
  if (known == route_to_worker_.end()) return;
  // Lost now, not at its heartbeat timeout: until then it would still be sent tasks, and a
  // pool whose only worker was revoked hears nobody, which reads as the coordinator's own link
  // being down (nobody is reaped then).
  const std::string id = known->second;
  route_to_worker_.erase(known);
  const WorkerEntry* w = scheduler_.registry().Find(id);
  if (w == nullptr || w->gone() || w->route != route) return;
  const std::vector<LostAttempt> lost = scheduler_.RemoveWorker(id, now_ms, /*withdrawn=*/true);
  Logger("coordinator")->warn("worker {} is lost: its key '{}' was revoked ({} running task(s) "
                              "to run elsewhere, uncharged)", id, user, lost.size());
  ledger_.WorkerGone(id, lost.size());
  ledger_.Withdrawn(lost, "worker " + id + "'s key '" + user + "' was revoked");
}

Status PoolControl::Ban(const wire::BanWorker& req, const std::string& by, int64_t now_ms,
                        Outbox& out) {
  auto log = Logger("coordinator");
  if (req.worker_id.empty()) return InvalidArgument("no worker id to ban");
  if (!req.ban) {
    if (bans_.Find(req.worker_id) == nullptr) return NotFound("worker " + req.worker_id + " is not banned");
    COUPLER_RETURN_IF_ERROR(ledger_.store().RemoveBan(req.worker_id));
    bans_.Remove(req.worker_id);
    log->warn("worker {} unbanned by '{}': it may register again", req.worker_id, by);
    return Status::Ok();
  }
  COUPLER_RETURN_IF_ERROR(CheckOperatorReason(req.reason, "a ban"));
  store::BanRecord ban{req.worker_id, req.reason, by, WallClockMs()};
  // On disk before it counts: a ban the admin was told holds must hold after a restart.
  COUPLER_RETURN_IF_ERROR(ledger_.store().PutBan(ban));
  bans_.Add(ban);
  size_t moved = 0;
  const WorkerEntry* w = scheduler_.registry().Find(req.worker_id);
  if (w != nullptr && !w->gone()) {
    const std::string route = w->route;
    route_to_worker_.erase(route);
    const std::vector<LostAttempt> lost =
        scheduler_.RemoveWorker(req.worker_id, now_ms, /*withdrawn=*/true);
    moved = lost.size();
    ledger_.WorkerGone(req.worker_id, lost.size());
    ledger_.Withdrawn(lost, "worker " + req.worker_id + " was banned by '" + by + "'");
    // Told on its connection, as a refused registration is: it stops instead of retrying.
    out.ToRoute(route, wire::Encode(wire::ErrorFromStatus(
                           PermissionDenied(WorkerBans::RefusalMessage(ban)),
                           wire::MessageType::kRegisterWorker)));
  }
  log->warn("worker {} banned {} ({} task(s) to run elsewhere)", req.worker_id,
            WorkerBans::Describe(ban), moved);
  return Status::Ok();
}

Status PoolControl::RestoreBans() {
  COUPLER_ASSIGN_OR_RETURN(std::vector<store::BanRecord> bans, ledger_.store().LoadBans());
  if (!bans.empty()) Logger("coordinator")->info("{} worker id(s) banned (coupler workers lists them)", bans.size());
  bans_.Restore(bans);
  return Status::Ok();
}

std::vector<wire::WorkerStatus> PoolControl::Workers(int64_t now_ms) const {
  std::vector<wire::WorkerStatus> workers = scheduler_.Workers(now_ms);
  bans_.Mark(workers);
  gpu_fences_.Mark(workers);
  return workers;
}

LaunchRelay::GangLookup PoolControl::GangLookup() {
  return [this](const std::string& job_id, uint64_t task_id) -> std::optional<LaunchRelay::LiveGang> {
    std::optional<Scheduler::GangView> gang = scheduler_.FindRunningGang(job_id, task_id);
    if (!gang) return std::nullopt;
    LaunchRelay::LiveGang live;
    live.attempt = gang->attempt;
    live.leader = gang->workers.front().first;
    for (const auto& [id, ranks] : gang->workers) {
      const WorkerEntry* w = scheduler_.registry().Find(id);
      live.members.push_back({id, w != nullptr ? w->info.address : ""});
    }
    return live;
  };
}

void PoolControl::SweepLaunches(Outbox& out) {
  // Runs after every result message: with no gang running, skip building the lookup.
  if (launches_.idle()) return;
  LaunchRelay::Ended ended = launches_.Sweep(GangLookup());
  for (const auto& [worker, stop] : ended.stops) out.ToWorker(worker, wire::Encode(stop));
  for (const auto& [route, agent] : ended.agents) out.ToRoute(route, wire::Encode(agent));
}

void PoolControl::OnLaunchRequest(const std::string& route, const std::string& user,
                                  const wire::LaunchRequest& req, Outbox& out) {
  std::optional<LaunchRelay::LiveGang> gang = GangLookup()(req.gang.job_id, req.gang.task_id);
  std::string leader_key;
  if (gang) {
    if (const WorkerEntry* leader = scheduler_.registry().Find(gang->leader)) {
      leader_key = leader->key_name;
    }
  }
  Result<LaunchRelay::Admitted> admitted = launches_.Admit(req, route, user, leader_key, gang);
  if (!admitted.ok()) {
    Logger("coordinator")->warn("refused a gang launch on {} for key '{}': {}", req.host, user,
                                admitted.status().message());
    wire::LaunchOutput refused{0, 2, "coupler: " + std::string(admitted.status().message()) + "\n",
                               true, 255};
    out.ToRoute(route, wire::Encode(refused));
    return;
  }
  Logger("coordinator")->info("job {} task {}: starting the gang's MPI daemon on {} ({})",
                              req.gang.job_id, req.gang.task_id, req.host, admitted->worker_id);
  out.ToWorker(admitted->worker_id, wire::Encode(admitted->daemon));
}

void PoolControl::OnLaunchOutput(const std::string& worker_id, const wire::LaunchOutput& launched,
                                 Outbox& out) {
  if (std::optional<std::string> route = launches_.Relay(launched, worker_id)) {
    out.ToRoute(*route, wire::Encode(launched));
  }
  // Else the relay ended already (its gang did): the daemon's last words have no reader.
}

}  // namespace coupler::coordinator
