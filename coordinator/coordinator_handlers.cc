// The Coordinator's message handlers: one per message type, each a few scheduler calls.
#include <algorithm>

#include <fmt/format.h>

#include "coordinator/coordinator.h"
#include "coordinator/gpu_idle_watch.h"
#include "coordinator/job_intake.h"
#include "coordinator/reuse_index.h"
#include "runtime/io/atomic_file.h"
#include "runtime/job/workdir_marker.h"
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
        if (!scheduler_.AwaitsAdoption(o.job_id, o.task_id, o.attempt)) ++stale_outcomes_;
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
  RecordLost(joined.lost);
  WorkerEntry* w = scheduler_.registry().Find(reg.worker_id);
  w->key_name = user;
  w->route = route;
  route_to_worker_[route] = reg.worker_id;
  pending_acks_.erase(reg.worker_id);  // it sends again what it still keeps
  drain_logged_.erase(reg.worker_id);  // a new registration: its drain is yet to come
  events_.WorkerJoined(reg.worker_id, reg.host, reg.address, reg.slots, reg.gpus.size());
  for (const wire::HeldAttempt& h : joined.adopted) {
    events_.AttemptAdopted(EventRef(h.attempt.job_id, h.attempt.task_id, h.attempt.attempt),
                           reg.worker_id, h.started);
  }
  for (const LostAttempt& a : joined.abandoned) {
    events_.AttemptAbandoned(EventRef(a.job_id, a.task_id, a.attempt),
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
  SendToWorker(reg.worker_id, wire::Encode(wire::Registered{reg.worker_id, epoch_,
                                                            std::move(joined.release)}));
}

void Coordinator::OnResults(const std::string& worker_id, const wire::TaskResult& result) {
  if (result.prefetch > 0) {
    if (WorkerEntry* w = scheduler_.registry().Find(worker_id)) w->info.prefetch = result.prefetch;
  }
  std::vector<wire::TaskAttempt>& acks = pending_acks_[worker_id];
  for (const wire::TaskOutcome& o : result.outcomes) {
    acks.push_back({o.job_id, o.task_id, o.attempt});
    const OutcomeKind kind = scheduler_.OnOutcome(worker_id, o);
    if (kind == OutcomeKind::kRefused) {
      Logger("coordinator")->warn("job {}: worker {} gets none of its tasks from now on: {}",
                                  o.job_id, worker_id, o.error);
    } else if (kind == OutcomeKind::kStale) {
      ++stale_outcomes_;
      Logger("coordinator")->debug("dropped an outcome of job {} task {} attempt {} from {}: "
                                   "not the live attempt", o.job_id, o.task_id, o.attempt, worker_id);
    } else if (kind == OutcomeKind::kCommitted) {
      store_->AddCommit({o.job_id, o.task_id, o.attempt, o.output_paths, o.rows_in, o.rows_out,
                         o.device, o.kernel_ms, o.bytes_processed, worker_id});
      metrics_.task_duration.Observe(o.wall_ms / 1000.0);
      ++metrics_.tasks_done;
      if (o.gpu_requested_but_cpu) ++metrics_.gpu_fallback_tasks;
      // The commit that finishes a node may make the nodes reading it ready.
      if (const JobState* job = scheduler_.FindJob(o.job_id); job != nullptr && o.task_id < job->table().size()) {
        const uint32_t node = job->table().Describe(o.task_id).plan_node;
        if (job->node_done(node) == job->table().task_count(node)) {
          StampReadyNodes(*job);
          RecordReusable(*job, node);
        }
      }
      events_.TaskDone(EventRef(o.job_id, o.task_id, o.attempt), worker_id,
                       {o.wall_ms, o.kernel_ms, o.bytes_processed});
    } else if (kind == OutcomeKind::kRetrying || kind == OutcomeKind::kFailed) {
      store_->AddAttempt({o.job_id, o.task_id, o.attempt, worker_id, "failed", o.error, WallMs()});
      metrics_.task_duration.Observe(o.wall_ms / 1000.0);
      ++metrics_.tasks_failed;
      Logger("coordinator")->warn("job {} task {} attempt {} failed on {}: {}", o.job_id,
                                  o.task_id, o.attempt, worker_id, o.error);
      NoteFailure(EventRef(o.job_id, o.task_id, o.attempt), worker_id, o.error,
                  FailureCause(o.error_code));
    }
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
      events_.WorkerLost(id, lost.size());
      RecordLost(lost);
    }
  }
  return false;
}

void Coordinator::RefuseRevoked(const std::string& identity, const std::string& payload,
                                bool delimiter) {
  Result<wire::MessageType> type = wire::PeekType(payload);
  ReplyError(identity,
             PermissionDenied("this key is no longer authorized by the coordinator (it left "
                              "authorized/clients/ or was replaced there since this connection "
                              "opened)"),
             type.ok() ? *type : static_cast<wire::MessageType>(0), delimiter);
}

void Coordinator::OnClientMessage(const std::string& identity, const Principal& who,
                                  const std::string& payload, bool delimiter) {
  wire::DecodeLimits limits;
  limits.max_payload_bytes = options_.max_message_bytes;
  Result<wire::Message> msg = wire::Decode(payload, limits);
  if (!msg.ok()) {
    // Dropped and counted, and the client told why: silence would read as "no coordinator".
    ++dropped_;
    Result<wire::MessageType> type = wire::PeekType(payload);
    ReplyError(identity, msg.status().WithContext("malformed request"),
               type.ok() ? *type : static_cast<wire::MessageType>(0), delimiter);
    return;
  }
  if (const auto* submit = std::get_if<wire::SubmitJob>(&*msg)) {
    OnSubmit(identity, who.label(), *submit, delimiter);
  } else if (const auto* status = std::get_if<wire::StatusRequest>(&*msg)) {
    OnStatus(identity, *status, delimiter);
  } else if (const auto* cancel = std::get_if<wire::CancelJob>(&*msg)) {
    OnCancel(identity, who, *cancel, delimiter);
  } else if (const auto* retry = std::get_if<wire::RetryJob>(&*msg)) {
    OnRetry(identity, who, *retry, delimiter);
  } else if (const auto* drain = std::get_if<wire::DrainWorker>(&*msg)) {
    OnDrain(identity, who, *drain, delimiter);
  } else if (std::holds_alternative<wire::WorkersRequest>(*msg)) {
    wire::WorkersReply reply;
    reply.workers = scheduler_.Workers(NowMs());
    ReplyToClient(identity, wire::Encode(reply), delimiter);
  } else {
    ++dropped_;
    ReplyToClient(identity,
                  wire::Encode(wire::ErrorFromStatus(
                      InvalidArgument("not a client request"), wire::TypeOf(*msg))),
                  delimiter);
  }
}

void Coordinator::OnSubmit(const std::string& identity, const std::string& user,
                           const wire::SubmitJob& submit, bool delimiter) {
  // The coordinator is the store's only writer: ask it once, then count here. An id is taken
  // when the spec is handed in; one whose spec is refused is simply never used.
  if (next_job_number_ == 0) {
    Result<uint64_t> n = store_->NextJobNumber();
    if (!n.ok()) {
      ReplyError(identity, n.status(), wire::MessageType::kSubmitJob, delimiter);
      return;
    }
    next_job_number_ = *n;
  }
  if (!store_error_.ok()) {
    ReplyError(identity, store_error_.WithContext("cannot admit the job: the state cannot be written"),
               wire::MessageType::kSubmitJob, delimiter);
    return;
  }
  if (!submit.submission_id.empty()) {
    // A retried submission (the client lost the first reply): the job the first one made,
    // or, while that is still being admitted, its answer when it comes.
    std::optional<std::string> made;
    if (auto done = job_of_submission_.find(submit.submission_id); done != job_of_submission_.end()) {
      made = done->second;
    } else if (Result<std::optional<std::string>> stored =
                   store_->FindJobBySubmission(submit.submission_id);
               stored.ok()) {
      made = *stored;  // a job of an earlier start: in the state, not in memory
    }
    if (made) {
      wire::SubmitReply reply;
      reply.ok = true;
      reply.existing = true;
      reply.job_id = *made;
      ReplyToClient(identity, wire::Encode(reply), delimiter);
      return;
    }
    if (auto waiting = admitting_submissions_.find(submit.submission_id);
        waiting != admitting_submissions_.end()) {
      waiting->second.push_back({identity, delimiter});
      return;
    }
  }
  AdmissionQueue::Ticket ticket{identity, user, delimiter,
                                fmt::format("j-{:06d}", next_job_number_), WallMs(),
                                submit.submission_id};
  if (Status s = admissions_->Push(std::move(ticket), submit); !s.ok()) {
    ReplyError(identity, s, wire::MessageType::kSubmitJob, delimiter);
    return;
  }
  if (!submit.submission_id.empty()) admitting_submissions_[submit.submission_id];
  ++next_job_number_;
}

void Coordinator::AnswerDuplicates(const std::string& submission_id, const wire::SubmitReply* reply,
                                   const Status& error) {
  auto waiting = admitting_submissions_.find(submission_id);
  if (waiting == admitting_submissions_.end()) return;
  for (const WaitingDuplicate& d : waiting->second) {
    if (reply == nullptr) {
      ReplyError(d.identity, error, wire::MessageType::kSubmitJob, d.delimiter);
      continue;
    }
    wire::SubmitReply again = *reply;
    again.existing = again.ok;  // the same job, found rather than made
    ReplyToClient(d.identity, wire::Encode(again), d.delimiter);
  }
  admitting_submissions_.erase(waiting);
}

void Coordinator::FinishAdmissions() {
  for (AdmissionQueue::Done& d : admissions_->Take()) {
    const AdmissionQueue::Ticket& t = d.ticket;
    if (!d.admitted.ok()) {
      if (d.admitted.status().code() != StatusCode::kInvalidArgument) {
        ReplyError(t.identity, d.admitted.status(), wire::MessageType::kSubmitJob, t.delimiter);
        AnswerDuplicates(t.submission_id, nullptr, d.admitted.status());
        continue;
      }
      // The spec's own fault: the client shows the diagnostics (bad input).
      wire::SubmitReply reply;
      reply.ok = false;
      reply.error = d.admitted.status().message();
      ReplyToClient(t.identity, wire::Encode(reply), t.delimiter);
      AnswerDuplicates(t.submission_id, &reply, Status::Ok());
      continue;
    }
    AdmittedJob& admitted = *d.admitted;
    if (const std::string busy = RunDirHolder(admitted.job->graph()); !busy.empty()) {
      // A pinned run directory is one run's at a time: two would overwrite each other's files.
      wire::SubmitReply reply;
      reply.ok = false;
      reply.error = fmt::format(
          "{}: run_dir '{}' ({}) is in use by running job {}: wait for it or cancel it, or drop "
          "run_dir so that each run gets its own directory",
          admitted.job->graph().source_file, admitted.job->graph().run_dir,
          admitted.job->graph().workdir, busy);
      io::RemoveQuietly(job::WorkdirMarkerPath(admitted.job->graph().workdir, admitted.record.id));
      ReplyToClient(t.identity, wire::Encode(reply), t.delimiter);
      AnswerDuplicates(t.submission_id, &reply, Status::Ok());
      continue;
    }
    admitted.record.submission_id = t.submission_id;
    Status stored = store_error_.ok() ? store_->PutJob(admitted.record) : store_error_;
    NoteStoreResult(stored);
    if (!stored.ok()) {
      // Ours, not the spec's (a full disk): a runtime failure with its own code.
      const Status why = stored.WithContext("cannot admit the job: the state cannot be written");
      ReplyError(t.identity, why, wire::MessageType::kSubmitJob, t.delimiter);
      AnswerDuplicates(t.submission_id, nullptr, why);
      continue;
    }
    wire::SubmitReply reply;
    reply.ok = true;
    reply.job_id = admitted.record.id;
    persisted_phase_[reply.job_id] = JobPhase::kQueued;
    if (!t.submission_id.empty()) {
      job_of_submission_[t.submission_id] = reply.job_id;
      submission_of_job_[reply.job_id] = t.submission_id;
    }
    ++metrics_.jobs_submitted;
    Logger("coordinator")->info("job {} ({}) submitted{}: {} tasks", reply.job_id,
                                admitted.record.name, t.user.empty() ? "" : " by " + t.user,
                                admitted.job->table().size());
    StampReadyNodes(*admitted.job);
    events_.JobSubmitted(reply.job_id, admitted.record.name, t.user, admitted.job->table().size());
    scheduler_.AddJob(std::move(admitted.job));
    ReplyToClient(t.identity, wire::Encode(reply), t.delimiter);
    AnswerDuplicates(t.submission_id, &reply, Status::Ok());
  }
}

void Coordinator::OnStatus(const std::string& identity, const wire::StatusRequest& req,
                           bool delimiter) {
  if (!req.state.empty() && !job::ParseJobPhase(req.state)) {
    ReplyError(identity,
               InvalidArgument("no job state '" + req.state +
                               "' (queued, running, succeeded, failed, cancelled)"),
               wire::MessageType::kStatusRequest, delimiter);
    return;
  }
  JobState* job = req.job_id.empty() ? nullptr : scheduler_.FindJob(req.job_id);
  if (req.wait_ms > 0 && job != nullptr && !job->finished()) {
    waiters_.push_back({identity, req.job_id, NowMs() + std::min<uint32_t>(req.wait_ms, 60'000),
                        delimiter});
    return;
  }
  SendStatus(identity, req, delimiter);
}

std::vector<wire::JobStatus> Coordinator::CollectJobs(const std::string& job_id,
                                                      const std::string& state, uint32_t limit) {
  // As status shows a job this coordinator holds: finished in memory but not yet on disk, it is
  // not finished until a restart would agree.
  auto live = [this](const JobState& job) {
    wire::JobStatus st = scheduler_.Status(job);
    auto persisted = persisted_phase_.find(job.id());
    if (job.finished() && persisted != persisted_phase_.end() && persisted->second != job.phase()) {
      st.state = std::string(JobPhaseName(persisted->second));
      st.finished_ms = 0;
    }
    if (auto sid = submission_of_job_.find(job.id()); sid != submission_of_job_.end()) {
      st.submission_id = sid->second;
    }
    return st;
  };
  std::vector<wire::JobStatus> jobs;
  if (!job_id.empty()) {
    if (const JobState* job = scheduler_.FindJob(job_id)) {
      jobs.push_back(live(*job));
    } else if (std::optional<wire::JobStatus> stored = StoredSummary(job_id)) {
      jobs.push_back(std::move(*stored));
    }
    return jobs;
  }
  // Newest first, restored and live alike; ids (zero-padded numbers) order jobs submitted in
  // the same millisecond. Chosen by reference, rendered only once chosen.
  auto newer = [](int64_t a_ms, const std::string& a_id, int64_t b_ms, const std::string& b_id) {
    return a_ms != b_ms ? a_ms > b_ms : a_id > b_id;
  };
  std::vector<const JobState*> mine;
  for (const auto& job : scheduler_.jobs()) {
    if (!state.empty() && std::string_view(JobPhaseName(job->phase())) != state) continue;
    mine.push_back(job.get());
  }
  std::sort(mine.begin(), mine.end(), [&](const JobState* a, const JobState* b) {
    return newer(a->submitted_ms(), a->id(), b->submitted_ms(), b->id());
  });
  if (limit > 0 && mine.size() > limit) mine.resize(limit);
  // The newest of the state's other jobs: enough that `limit` are left after those it holds
  // that this coordinator runs (they are in both).
  std::vector<store::JobRecord> stored;
  const uint32_t ask = limit == 0 ? 0 : limit + static_cast<uint32_t>(scheduler_.jobs().size());
  if (Result<std::vector<store::JobRecord>> rows = store_->ListJobs(state, ask); rows.ok()) {
    stored = std::move(*rows);
  } else {
    Logger("coordinator")->warn("cannot list the state's jobs: {}", rows.status().message());
  }
  std::erase_if(stored, [this](const store::JobRecord& r) { return scheduler_.FindJob(r.id) != nullptr; });
  size_t i = 0, j = 0;
  while ((i < mine.size() || j < stored.size()) && (limit == 0 || jobs.size() < limit)) {
    const bool take_mine =
        j == stored.size() ||
        (i < mine.size() && newer(mine[i]->submitted_ms(), mine[i]->id(), stored[j].submitted_ms,
                                  stored[j].id));
    if (take_mine) {
      jobs.push_back(live(*mine[i++]));
    } else {
      jobs.push_back(SummaryOf(stored[j++]));
    }
  }
  // A job whose in-memory state lags its filter (finished, not yet on disk) shows its
  // persisted state: keep the filter honest.
  if (!state.empty()) std::erase_if(jobs, [&](const wire::JobStatus& st) { return st.state != state; });
  return jobs;
}

std::map<std::string, uint64_t> Coordinator::CountJobs() const {
  std::map<std::string, uint64_t> counts = earlier_jobs_;
  for (const auto& job : scheduler_.jobs()) ++counts[std::string(JobPhaseName(job->phase()))];
  return counts;
}

wire::CoordinatorStats Coordinator::CollectStats() {
  wire::CoordinatorStats stats;
  stats.messages_received = received_;
  stats.messages_dropped = dropped_;
  stats.workers_alive = static_cast<uint32_t>(scheduler_.registry().alive());
  stats.uptime_ms = static_cast<uint64_t>(NowMs());
  stats.handshakes_refused = zap_ ? zap_->refused() : 0;
  stats.registrations_refused = registrations_refused_;
  stats.stale_outcomes_dropped = stale_outcomes_;
  stats.encrypted = server_keys_.has_value();
  stats.store_error = store_error_.message();
  stats.replies_dropped = replies_dropped_;
  scheduler_.FillPoolStats(stats);
  return stats;
}

void Coordinator::SendStatus(const std::string& identity, const wire::StatusRequest& req,
                             bool delimiter) {
  const std::string& job_id = req.job_id;
  // What a client sees as done is durable: flush before answering.
  PersistFinishedJobs();
  FlushStore();
  wire::StatusReply reply;
  reply.jobs = CollectJobs(job_id, req.state, req.limit);
  if (!job_id.empty() && reply.jobs.empty()) {
    ReplyToClient(identity,
                  wire::Encode(wire::ErrorFromStatus(NotFound("no job " + job_id),
                                                     wire::MessageType::kStatusRequest)),
                  delimiter);
    return;
  }
  reply.coordinator = CollectStats();
  ReplyToClient(identity, wire::Encode(reply), delimiter);
}

void Coordinator::AnswerWaiters(bool all_due) {
  if (waiters_.empty()) return;
  const int64_t now = NowMs();
  std::vector<Waiter> still;
  for (auto& w : waiters_) {
    JobState* job = scheduler_.FindJob(w.job_id);
    if (all_due || job == nullptr || job->finished() || now >= w.deadline_ms) {
      wire::StatusRequest req;
      req.job_id = w.job_id;
      SendStatus(w.identity, req, w.delimiter);
    } else {
      still.push_back(std::move(w));
    }
  }
  waiters_.swap(still);
}

bool Coordinator::MayControl(const Principal& who, const std::string& owner) {
  switch (who.kind) {
    case Principal::Kind::kInsecure:
      return true;  // --insecure: nobody is told apart
    case Principal::Kind::kHttpApi:
      // The HTTP API's token is the state directory owner's: an admin's credential.
      return true;
    case Principal::Kind::kKey:
      // Its own jobs by name (a key replaced under the same name keeps them); an admin's
      // rights by key. The API's label holds '@', which no key name may: no key owns its jobs.
      if (!owner.empty() && who.name == owner) return true;
      return allow_lists_ != nullptr && allow_lists_->IsAdmin(who.public_z85);
  }
  return false;
}

void Coordinator::ReplyError(const std::string& identity, const Status& status,
                             wire::MessageType about, bool delimiter) {
  ReplyToClient(identity, wire::Encode(wire::ErrorFromStatus(status, about)), delimiter);
}

void Coordinator::OnCancel(const std::string& identity, const Principal& who,
                           const wire::CancelJob& req, bool delimiter) {
  const std::string user = who.label();
  JobState* job = scheduler_.FindJob(req.job_id);
  const std::optional<wire::JobStatus> summary =
      job == nullptr ? StoredSummary(req.job_id) : std::nullopt;
  if (job == nullptr && !summary) {
    ReplyError(identity, NotFound("no job " + req.job_id), wire::MessageType::kCancelJob, delimiter);
    return;
  }
  const std::string owner = job != nullptr ? job->submitted_by() : summary->submitted_by;
  if (!MayControl(who, owner)) {
    Logger("coordinator")->warn("refused to cancel job {} for key '{}': it is not the submitter "
                                "nor an admin", req.job_id, user);
    ReplyError(identity,
               PermissionDenied("job " + req.job_id + " was submitted by '" + owner +
                                "': only its submitter or an admin key (authorized/admins/) may "
                                "cancel it"),
               wire::MessageType::kCancelJob, delimiter);
    return;
  }
  if (job == nullptr) {
    ReplyToClient(identity,
                  wire::Encode(wire::Ack{static_cast<uint16_t>(wire::MessageType::kCancelJob),
                                         "job already finished"}),
                  delimiter);
    return;
  }
  const bool was_finished = job->finished();
  for (const auto& worker : scheduler_.Cancel(req.job_id)) SendToWorker(worker, wire::Encode(req));
  if (!was_finished) events_.JobCancelled(req.job_id, user);
  PersistFinishedJobs();
  ReplyToClient(identity,
                wire::Encode(wire::Ack{static_cast<uint16_t>(wire::MessageType::kCancelJob),
                                       was_finished ? "job already finished" : "cancelled"}),
                delimiter);
}

std::string Coordinator::RunDirHolder(const job::JobGraph& graph) const {
  if (graph.run_dir.empty()) return "";  // runs/{job_id}: never another job's
  for (const auto& other : scheduler_.jobs()) {
    if (!other->finished() && other->graph().workdir == graph.workdir) return other->id();
  }
  return "";
}

void Coordinator::RecordReusable(const JobState& job, uint32_t plan_node) {
  const std::string& key = job.node_key(plan_node);
  if (reuse_ == nullptr || key.empty() || job.node_reused(plan_node) ||
      job.graph().workdir_root.empty()) {
    return;
  }
  Status s = reuse_->Record(job.graph().workdir_root, key, job.graph().workdir, job.id(),
                            job.plan().nodes[plan_node].id);
  if (!s.ok()) {
    // Only a later --reuse loses: it runs the node again.
    Logger("coordinator")->warn("job {} node {}: not recorded for reuse: {}", job.id(),
                                job.plan().nodes[plan_node].id, s.message());
  }
}

void Coordinator::OnRetry(const std::string& identity, const Principal& who,
                          const wire::RetryJob& req, bool delimiter) {
  const std::string user = who.label();
  auto refuse = [&](const Status& why) {
    ReplyError(identity, why, wire::MessageType::kRetryJob, delimiter);
  };
  PersistFinishedJobs();  // what it says about the job's state is what the store holds
  JobState* job = scheduler_.FindJob(req.job_id);
  const std::optional<wire::JobStatus> summary =
      job == nullptr ? StoredSummary(req.job_id) : std::nullopt;
  if (job == nullptr && !summary) return refuse(NotFound("no job " + req.job_id));
  const std::string owner = job != nullptr ? job->submitted_by() : summary->submitted_by;
  if (!MayControl(who, owner)) {
    Logger("coordinator")->warn("refused to retry job {} for key '{}': it is not the submitter "
                                "nor an admin", req.job_id, user);
    return refuse(PermissionDenied("job " + req.job_id + " was submitted by '" + owner +
                                   "': only its submitter or an admin key (authorized/admins/) "
                                   "may retry it"));
  }
  const std::string state = job != nullptr ? std::string(JobPhaseName(job->phase()))
                                           : summary->state;
  const std::optional<JobPhase> phase = job::ParseJobPhase(state);
  if (!phase || !job::IsFinished(*phase)) {
    return refuse(InvalidArgument("job " + req.job_id + " is " + state +
                                  ": only a failed or cancelled job can be retried (cancel it "
                                  "first, or wait for it)"));
  }
  if (*phase == JobPhase::kSucceeded) {
    return refuse(InvalidArgument("job " + req.job_id +
                                  " succeeded: nothing to retry (submit the spec again; --reuse "
                                  "skips the nodes that did not change)"));
  }
  if (job != nullptr && persisted_phase_[req.job_id] != job->phase()) {
    return refuse(Unavailable("job " + req.job_id + "'s end is not on disk yet: try again"));
  }
  // Its own row only (with its plan), never every job's.
  Result<std::optional<store::JobRecord>> loaded = store_->LoadJob(req.job_id);
  if (!loaded.ok()) return refuse(loaded.status().WithContext("cannot retry"));
  if (!loaded->has_value()) return refuse(Internal("job " + req.job_id + " is not in the store"));
  const store::JobRecord* rec = &**loaded;
  std::unique_ptr<JobState> restored;
  if (job == nullptr || job->compacted()) {
    // Finished before this coordinator started: rebuilt from the store as a restart would.
    auto commits = store_->LoadCommits(rec->id);
    auto attempts = store_->LoadAttempts(rec->id);
    auto sent = store_->LoadSent(rec->id);
    if (!commits.ok() || !attempts.ok() || !sent.ok()) {
      return refuse(Internal("cannot read job " + rec->id + "'s tasks from the store"));
    }
    Result<std::unique_ptr<JobState>> rebuilt = RestoreJob(*rec, *commits, *attempts, *sent);
    if (!rebuilt.ok()) return refuse(rebuilt.status().WithContext("cannot retry"));
    restored = std::move(*rebuilt);
    job = restored.get();
  }
  if (const std::string busy = RunDirHolder(job->graph()); !busy.empty()) {
    return refuse(InvalidArgument("job " + req.job_id + "'s run_dir '" + job->graph().run_dir +
                                  "' (" + job->graph().workdir + ") is in use by running job " +
                                  busy + ": retry it once that one has finished"));
  }
  job->Retry();
  store::JobRecord updated = *rec;
  updated.extra = ExtraAfterRetry(rec->extra, *job);
  updated.state = std::string(JobPhaseName(job->phase()));
  updated.error.clear();
  updated.finished_ms = 0;
  if (Status s = store_->PutJob(updated); !s.ok()) {
    NoteStoreResult(s);
    return refuse(s.WithContext("cannot retry: the state cannot be written"));
  }
  persisted_phase_[req.job_id] = job->phase();
  const uint64_t left = job->table().size() - job->done();
  if (restored != nullptr) {
    if (summary) {
      // Finished before this start: counted with the state's jobs until now.
      if (auto n = earlier_jobs_.find(summary->state); n != earlier_jobs_.end() && n->second > 0) {
        --n->second;
      }
    }
    scheduler_.AddJob(std::move(restored));
  }
  StampReadyNodes(*job);
  Logger("coordinator")->info("job {} retried{}: {} of {} tasks to run again", req.job_id,
                              user.empty() ? "" : " by " + user, left, job->table().size());
  ReplyToClient(identity,
                wire::Encode(wire::Ack{static_cast<uint16_t>(wire::MessageType::kRetryJob),
                                       fmt::format("retrying {}: {} of {} tasks to run",
                                                   req.job_id, left, job->table().size())}),
                delimiter);
}

void Coordinator::OnDrain(const std::string& identity, const Principal& who,
                          const wire::DrainWorker& req, bool delimiter) {
  const std::string user = who.label();
  if (!MayControl(who, "")) {
    Logger("coordinator")->warn("refused to drain worker {} for key '{}': not an admin",
                                req.worker_id, user);
    ReplyError(identity,
               PermissionDenied("draining a worker needs an admin key (authorized/admins/)"),
               wire::MessageType::kDrainWorker, delimiter);
    return;
  }
  if (scheduler_.registry().Find(req.worker_id) == nullptr) {
    ReplyError(identity, NotFound("no worker " + req.worker_id), wire::MessageType::kDrainWorker,
               delimiter);
    return;
  }
  scheduler_.registry().SetDraining(req.worker_id);
  NoteDraining(req.worker_id, "admin");
  SendToWorker(req.worker_id, wire::Encode(req));
  ReplyToClient(identity,
                wire::Encode(wire::Ack{static_cast<uint16_t>(wire::MessageType::kDrainWorker),
                                       "draining " + req.worker_id}),
                delimiter);
}

}  // namespace coupler::coordinator
