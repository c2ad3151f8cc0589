// The event loop's message handlers: each decodes, asks the part whose concept the message is
// (Scheduler, JobControl, Ledger) and routes what it answers.
#include <fmt/format.h>

#include "coordinator/coordinator.h"
#include "coordinator/gpu_idle_watch.h"
#include "runtime/logging.h"
#include "runtime/wire/codec.h"
#include "runtime/wire/control_messages.h"

namespace coupler::coordinator {

void Coordinator::OnWorkerMessage(const std::string& route, const std::string& user,
                                  const std::string& payload) {
  wire::DecodeLimits limits;
  limits.max_payload_bytes = options_.max_message_bytes;
  Result<wire::Message> msg = wire::Decode(payload, limits);
  if (!msg.ok()) {
    ++dropped_;
    Logger("coordinator")->debug("dropped a malformed worker message: {}", msg.status().message());
    return;
  }
  if (const auto* reg = std::get_if<wire::RegisterWorker>(&*msg)) {
    OnRegister(route, user, *reg);
    return;
  }
  if (const auto* launch = std::get_if<wire::LaunchRequest>(&*msg)) {
    // From a gang leader's launcher hook: a connection of its own, never registered.
    OnLaunchRequest(route, user, *launch);
    return;
  }
  // Who sent it is the connection, never the ids inside the message.
  auto known = route_to_worker_.find(route);
  if (known == route_to_worker_.end() || !scheduler_.registry().Heard(known->second, NowMs())) {
    // A worker we do not know (we restarted, or it was declared dead): it must register again.
    // Results it sends meanwhile are not taken here: it keeps them until acknowledged and
    // sends them again after its registration, which adopts their attempts if they are still
    // awaited (in flight at a restart). The others are of attempts already given up on.
    if (const auto* result = std::get_if<wire::TaskResult>(&*msg)) {
      for (const wire::TaskOutcome& o : result->outcomes) {
        if (!scheduler_.AwaitsAdoption(o.job_id, o.task_id, o.attempt)) ledger_.CountStale();
      }
    }
    SendToRoute(route, wire::Encode(wire::RegisterAgain{
                          known == route_to_worker_.end()
                              ? "this connection has not registered (the coordinator restarted?)"
                              : "worker " + known->second + " was given up on: register again"}));
    return;
  }
  const std::string& worker_id = known->second;
  if (const auto* beat = std::get_if<wire::Heartbeat>(&*msg)) {
    if (scheduler_.OnHeartbeat(worker_id, *beat, NowMs())) {
      Logger("coordinator")->info("worker {} drained and left", worker_id);
    }
    OnGpuHeartbeat(scheduler_, worker_id, *beat, NowMs());
    if (beat->draining) NoteDrainingBeat(worker_id);
  } else if (const auto* result = std::get_if<wire::TaskResult>(&*msg)) {
    OnResults(worker_id, *result);
    SweepLaunches();
  } else if (const auto* out = std::get_if<wire::LaunchOutput>(&*msg)) {
    OnLaunchOutput(worker_id, *out);
  } else if (const auto* back = std::get_if<wire::Reclaimed>(&*msg)) {
    if (const size_t n = scheduler_.OnReclaimed(worker_id, back->released); n > 0) {
      Logger("coordinator")->info("took {} queued task(s) back from worker {} for idle slots", n,
                                  worker_id);
    }
  } else {
    ++dropped_;
  }
}

void Coordinator::OnLaunchRequest(const std::string& route, const std::string& user,
                                  const wire::LaunchRequest& req) {
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
    SendToRoute(route, wire::Encode(refused));
    return;
  }
  Logger("coordinator")->info("job {} task {}: starting the gang's MPI daemon on {} ({})",
                              req.gang.job_id, req.gang.task_id, req.host, admitted->worker_id);
  SendToWorker(admitted->worker_id, wire::Encode(admitted->daemon));
}

void Coordinator::OnLaunchOutput(const std::string& worker_id, const wire::LaunchOutput& out) {
  if (std::optional<std::string> route = launches_.Relay(out, worker_id)) {
    SendToRoute(*route, wire::Encode(out));
  }
  // Else the relay ended already (its gang did): the daemon's last words have no reader.
}

void Coordinator::OnRegister(const std::string& route, const std::string& user,
                             const wire::RegisterWorker& reg) {
  if (reg.worker_id.empty()) {
    ++dropped_;
    return;
  }
  if (WorkerEntry* existing = scheduler_.registry().Find(reg.worker_id)) {
    if (existing->key_name != user) {
      // The id is bound to the key that first registered it: a peer with another key must not
      // take over its route or its tasks.
      ++registrations_refused_;
      Logger("coordinator")->warn("refused a registration as worker {} by key '{}': that id "
                                  "belongs to key '{}'",
                                  reg.worker_id, user, existing->key_name);
      SendToRoute(route, wire::Encode(wire::ErrorFromStatus(
                            PermissionDenied("worker id " + reg.worker_id +
                                             " is registered with another key; pick another --id"),
                            wire::MessageType::kRegisterWorker)));
      return;
    }
    route_to_worker_.erase(existing->route);
  }
  Registration joined = scheduler_.RegisterWorker(reg, NowMs(), user);
  ledger_.Lost(joined.lost);
  WorkerEntry* w = scheduler_.registry().Find(reg.worker_id);
  w->key_name = user;
  w->route = route;
  route_to_worker_[route] = reg.worker_id;
  ledger_.WorkerJoined(reg);
  for (const wire::HeldAttempt& h : joined.adopted) ledger_.Adopted(h, reg.worker_id);
  for (const LostAttempt& a : joined.abandoned) {
    ledger_.Abandoned(a.job_id, a.task_id, a.attempt,
                      "sent before the coordinator restarted to worker " + reg.worker_id +
                          ", which registered again without it: the task runs again");
  }
  Logger("coordinator")->info("worker {} joined from {} with {} slots, {} GPUs{}{}", reg.worker_id,
                              reg.host, reg.slots, reg.gpus.size(),
                              user.empty() ? "" : ", key " + user,
                              reg.holding.empty()
                                  ? std::string()
                                  : fmt::format("; of {} attempt(s) it holds, {} adopted, {} "
                                                "released", reg.holding.size(),
                                                joined.adopted.size(), joined.release.size()));
  SendToWorker(reg.worker_id, wire::Encode(wire::Registered{reg.worker_id, ledger_.epoch(),
                                                            std::move(joined.release)}));
}

void Coordinator::OnResults(const std::string& worker_id, const wire::TaskResult& result) {
  if (result.prefetch > 0) {
    if (WorkerEntry* w = scheduler_.registry().Find(worker_id)) w->info.prefetch = result.prefetch;
  }
  for (const wire::TaskOutcome& o : result.outcomes) {
    ledger_.Outcome(worker_id, o, scheduler_.OnOutcome(worker_id, o));
  }
}

Principal Coordinator::PeerPrincipal(const std::string& user, const std::string& key) const {
  if (!sessions_) return Principal::Insecure();
  return Principal::Key(user, key);
}

bool Coordinator::SessionAllowed(const char* domain, const std::string& route,
                                 const std::string& user, const std::string& key) {
  if (!sessions_) return true;
  const SessionCheck::Verdict v = sessions_->Check(domain, user, key);
  if (v.allowed) return true;
  ++dropped_;
  if (v.first_refusal) {
    Logger("coordinator")->warn("refusing the messages of an open {} connection of key '{}' "
                                "({}...): that key is no longer in authorized/{}/ under that name",
                                domain, user, key.substr(0, 8), domain);
  }
  auto known = route_to_worker_.find(route);
  if (domain == std::string_view(kWorkersDomain) && known != route_to_worker_.end()) {
    // Lost now, not at its heartbeat timeout: until then it would still be sent tasks, and a
    // pool whose only worker was revoked hears nobody, which reads as the coordinator's own
    // link being down (nobody is reaped then).
    const std::string id = known->second;
    route_to_worker_.erase(known);
    const WorkerEntry* w = scheduler_.registry().Find(id);
    if (w != nullptr && !w->gone() && w->route == route) {
      const std::vector<LostAttempt> lost = scheduler_.RemoveWorker(id, NowMs());
      Logger("coordinator")->warn("worker {} is lost: its key '{}' was revoked ({} task(s) to run "
                                  "elsewhere)", id, user, lost.size());
      ledger_.WorkerGone(id, lost.size());
      ledger_.Lost(lost);
    }
  }
  return false;
}

void Coordinator::RefuseRevoked(const std::string& identity, const std::string& payload,
                                bool delimiter) {
  Result<wire::MessageType> type = wire::PeekType(payload);
  Outbox out;
  out.Error({identity, delimiter},
            PermissionDenied("this key is no longer authorized by the coordinator (it left "
                             "authorized/clients/ or was replaced there since this connection "
                             "opened)"),
            type.ok() ? *type : static_cast<wire::MessageType>(0));
  Deliver(out);
}

void Coordinator::OnClientMessage(const std::string& identity, const Principal& who,
                                  const std::string& payload, bool delimiter) {
  const ClientRef from{identity, delimiter};
  Outbox out;
  wire::DecodeLimits limits;
  limits.max_payload_bytes = options_.max_message_bytes;
  Result<wire::Message> msg = wire::Decode(payload, limits);
  if (!msg.ok()) {
    // Dropped and counted, and the client told why: silence would read as "no coordinator".
    ++dropped_;
    Result<wire::MessageType> type = wire::PeekType(payload);
    out.Error(from, msg.status().WithContext("malformed request"),
              type.ok() ? *type : static_cast<wire::MessageType>(0));
  } else if (const auto* submit = std::get_if<wire::SubmitJob>(&*msg)) {
    OnSubmit(from, who.label(), *submit);
  } else if (const auto* status = std::get_if<wire::StatusRequest>(&*msg)) {
    control_.OnStatus(from, *status, NowMs(), out);
  } else if (const auto* cancel = std::get_if<wire::CancelJob>(&*msg)) {
    control_.OnCancel(from, who, *cancel, out);
  } else if (const auto* retry = std::get_if<wire::RetryJob>(&*msg)) {
    if (std::optional<JobControl::RetryTicket> ticket = control_.OnRetry(from, who, *retry, out)) {
      admissions_->PushRetry(std::move(ticket->ticket), ticket->rebuild);
    }
  } else if (const auto* drain = std::get_if<wire::DrainWorker>(&*msg)) {
    OnDrain(from, who, *drain);
  } else if (std::holds_alternative<wire::WorkersRequest>(*msg)) {
    wire::WorkersReply reply;
    reply.workers = scheduler_.Workers(NowMs());
    out.Reply(from, wire::Encode(reply));
  } else {
    ++dropped_;
    out.Error(from, InvalidArgument("not a client request"), wire::TypeOf(*msg));
  }
  Deliver(out);
}

void Coordinator::OnSubmit(const ClientRef& from, const std::string& user,
                           const wire::SubmitJob& submit) {
  Outbox out;
  if (std::optional<AdmissionQueue::Ticket> ticket =
          control_.OnSubmit(from, user, submit, WallClockMs(), out)) {
    const Status pushed = admissions_->Push(*ticket, submit);
    control_.Queued(*ticket, pushed, out);
  }
  Deliver(out);
}

void Coordinator::FinishAdmissions() {
  Outbox out;
  for (AdmissionQueue::Done& d : admissions_->Take()) control_.Admitted(d, out);
  for (AdmissionQueue::RetryDone& d : admissions_->TakeRetries()) control_.RetryLoaded(d, out);
  Deliver(out);
}

wire::CoordinatorStats Coordinator::CollectStats() {
  wire::CoordinatorStats stats;
  stats.messages_received = received_;
  stats.messages_dropped = dropped_;
  stats.workers_alive = static_cast<uint32_t>(scheduler_.registry().alive());
  stats.uptime_ms = static_cast<uint64_t>(NowMs());
  stats.handshakes_refused = zap_ ? zap_->refused() : 0;
  stats.registrations_refused = registrations_refused_;
  stats.stale_outcomes_dropped = ledger_.stale_outcomes();
  stats.encrypted = server_keys_.has_value();
  stats.store_error = ledger_.store_error().message();
  stats.replies_dropped = replies_dropped_;
  scheduler_.FillPoolStats(stats);
  return stats;
}

void Coordinator::OnDrain(const ClientRef& from, const Principal& who, const wire::DrainWorker& req) {
  Outbox out;
  if (!control_.MayControl(who, "")) {
    Logger("coordinator")->warn("refused to drain worker {} for key '{}': not an admin",
                                req.worker_id, who.label());
    out.Error(from, PermissionDenied("draining a worker needs an admin key (authorized/admins/)"),
              wire::MessageType::kDrainWorker);
  } else if (scheduler_.registry().Find(req.worker_id) == nullptr) {
    out.Error(from, NotFound("no worker " + req.worker_id), wire::MessageType::kDrainWorker);
  } else {
    scheduler_.registry().SetDraining(req.worker_id);
    ledger_.WorkerDraining(req.worker_id, "admin");
    out.workers.push_back({req.worker_id, wire::Encode(req)});
    out.Reply(from, wire::Encode(wire::Ack{static_cast<uint16_t>(wire::MessageType::kDrainWorker),
                                           "draining " + req.worker_id}));
  }
  Deliver(out);
}

}  // namespace coupler::coordinator
