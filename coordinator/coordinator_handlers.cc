// The event loop's message handlers: each decodes, asks the part whose concept the message is
// (PoolControl for workers, JobControl for clients) and routes what it answers.
#include <fmt/format.h>

#include "coordinator/coordinator.h"
#include "runtime/logging.h"
#include "runtime/wire/codec.h"
#include "runtime/wire/control_messages.h"
#include "runtime/wire/envelope.h"

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
  // Decode read the header already: it is whole and of our version.
  if (const uint64_t epoch = wire::ReadHeader(payload)->epoch; epoch > ledger_.epoch()) {
    // The worker registered with a newer coordinator: one that took this state over (its lock
    // file removed, or lost on a shared file system), and then the store's generation has
    // moved past our last commit — or one of another state (a state directory started afresh
    // while the workers ran on), and then it has not, and the worker simply registers with us.
    Result<bool> taken = ledger_.store().CheckTakenOver();
    if (taken.ok() && *taken) {
      // Nothing it sends is ours to take, and nothing we would send it counts any more.
      if (fenced_by_worker_.ok()) {
        fenced_by_worker_ = Aborted(fmt::format(
            "fenced: a worker speaks for coordinator epoch {}, newer than this coordinator's {}, "
            "and another coordinator has written this state since: it has taken this state "
            "directory over",
            epoch, ledger_.epoch()));
      }
      return;
    }
  }
  Outbox out;
  if (!pool_.OnMessage(route, user, *msg, NowMs(), out)) ++dropped_;
  Deliver(out);
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
  if (domain == std::string_view(kWorkersDomain)) pool_.Revoked(route, user, NowMs());
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
  } else if (const auto* ban = std::get_if<wire::BanWorker>(&*msg)) {
    OnBan(from, who, *ban);
  } else if (const auto* fence = std::get_if<wire::FenceGpu>(&*msg)) {
    OnFenceGpu(from, who, *fence);
  } else if (std::holds_alternative<wire::WorkersRequest>(*msg)) {
    wire::WorkersReply reply;
    reply.workers = pool_.Workers(NowMs());
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
  stats.registrations_refused = pool_.registrations_refused();
  stats.stale_outcomes_dropped = ledger_.stale_outcomes();
  stats.encrypted = server_keys_.has_value();
  stats.store_error = ledger_.store_error().message();
  stats.replies_dropped = replies_dropped_;
  scheduler_.FillPoolStats(stats);
  pool_.AppendFenceWarnings(stats.warnings);
  return stats;
}

void Coordinator::OnDrain(const ClientRef& from, const Principal& who, const wire::DrainWorker& req) {
  Outbox out;
  if (!control_.MayControl(who, "")) {
    Logger("coordinator")->warn("refused to drain worker {} for key '{}': not an admin",
                                req.worker_id, who.label());
    out.Error(from, PermissionDenied("draining a worker needs an admin key (authorized/admins/)"),
              wire::MessageType::kDrainWorker);
  } else if (!pool_.Drain(req, out)) {
    out.Error(from, NotFound("no worker " + req.worker_id), wire::MessageType::kDrainWorker);
  } else {
    out.Reply(from, wire::Encode(wire::Ack{static_cast<uint16_t>(wire::MessageType::kDrainWorker),
                                           "draining " + req.worker_id}));
  }
  Deliver(out);
}

void Coordinator::OnBan(const ClientRef& from, const Principal& who, const wire::BanWorker& req) {
  Outbox out;
  const char* what = req.ban ? "ban" : "unban";
  if (!control_.MayControl(who, "")) {
    Logger("coordinator")->warn("refused to {} worker {} for key '{}': not an admin", what,
                                req.worker_id, who.label());
    out.Error(from,
              PermissionDenied(std::string(req.ban ? "banning" : "unbanning") +
                               " a worker needs an admin key (authorized/admins/)"),
              wire::MessageType::kBanWorker);
  } else if (Status s = pool_.Ban(req, who.label(), NowMs(), out); !s.ok()) {
    out.Error(from, s, wire::MessageType::kBanWorker);
  } else {
    out.Reply(from, wire::Encode(wire::Ack{static_cast<uint16_t>(wire::MessageType::kBanWorker),
                                           std::string(req.ban ? "banned " : "unbanned ") +
                                               req.worker_id}));
  }
  Deliver(out);
}

void Coordinator::OnFenceGpu(const ClientRef& from, const Principal& who,
                             const wire::FenceGpu& req) {
  Outbox out;
  const char* what = req.fence ? "fence" : "clear";
  if (!control_.MayControl(who, "")) {
    Logger("coordinator")->warn("refused to {} GPUs of worker {} for key '{}': not an admin", what,
                                req.worker_id, who.label());
    out.Error(from,
              PermissionDenied(std::string(req.fence ? "fencing" : "clearing") +
                               " a GPU needs an admin key (authorized/admins/)"),
              wire::MessageType::kFenceGpu);
  } else if (Status s = pool_.FenceGpus(req, who.label()); !s.ok()) {
    out.Error(from, s, wire::MessageType::kFenceGpu);
  } else {
    out.Reply(from, wire::Encode(wire::Ack{static_cast<uint16_t>(wire::MessageType::kFenceGpu),
                                           std::string(req.fence ? "fenced" : "cleared") +
                                               " GPU(s) of " + req.worker_id}));
  }
  Deliver(out);
}

}  // namespace coupler::coordinator
