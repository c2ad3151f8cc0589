#include "coordinator/job_control.h"

#include <sys/stat.h>

#include <algorithm>

#include <fmt/format.h>

#include "coordinator/admitted_plan.h"
#include "coordinator/job_intake.h"
#include "runtime/io/atomic_file.h"
#include "runtime/job/workdir_marker.h"
#include "runtime/logging.h"
#include "runtime/wire/codec.h"

namespace coupler::coordinator {
namespace {

// Longest a status request may wait for its job to finish.
constexpr uint32_t kMaxWaitMs = 60'000;

std::string Ack(wire::MessageType about, std::string text) {
  return wire::Encode(wire::Ack{static_cast<uint16_t>(about), std::move(text)});
}

}  // namespace

JobControl::JobControl(Scheduler& scheduler, Ledger& ledger,
                       std::function<wire::CoordinatorStats()> stats)
    : scheduler_(scheduler), ledger_(ledger), stats_(std::move(stats)) {}

void JobControl::Restored(const store::JobRecord& record) {
  if (record.submission_id.empty()) return;
  job_of_submission_[record.submission_id] = record.id;
  submission_of_job_[record.id] = record.submission_id;
}

void JobControl::JobsEvicted(const std::vector<std::pair<std::string, JobPhase>>& evicted) {
  for (const auto& ev : evicted) {
    auto sid = submission_of_job_.find(ev.first);
    if (sid == submission_of_job_.end()) continue;
    job_of_submission_.erase(sid->second);
    submission_of_job_.erase(sid);
  }
}

std::optional<AdmissionQueue::Ticket> JobControl::OnSubmit(const ClientRef& from,
                                                           const std::string& user,
                                                           const wire::SubmitJob& submit,
                                                           int64_t wall_ms, Outbox& out) {
  // The coordinator is the store's only writer: ask it once, then count here. An id is taken
  // when the spec is handed in; one whose spec is refused is simply never used.
  if (next_job_number_ == 0) {
    Result<uint64_t> n = ledger_.store().NextJobNumber();
    if (!n.ok()) {
      out.Error(from, n.status(), wire::MessageType::kSubmitJob);
      return std::nullopt;
    }
    next_job_number_ = *n;
  }
  if (!ledger_.writable()) {
    out.Error(from,
              ledger_.store_error().WithContext("cannot admit the job: the state cannot be written"),
              wire::MessageType::kSubmitJob);
    return std::nullopt;
  }
  if (!submit.submission_id.empty()) {
    // A retried submission (the client lost the first reply): the job the first one made,
    // or, while that is still being admitted, its answer when it comes.
    std::optional<std::string> made;
    if (auto done = job_of_submission_.find(submit.submission_id); done != job_of_submission_.end()) {
      made = done->second;
    } else if (Result<std::optional<std::string>> stored =
                   ledger_.store().FindJobBySubmission(submit.submission_id);
               stored.ok()) {
      made = *stored;  // a job of an earlier start: in the state, not in memory
    }
    if (made) {
      wire::SubmitReply reply;
      reply.ok = true;
      reply.existing = true;
      reply.job_id = *made;
      out.Reply(from, wire::Encode(reply));
      return std::nullopt;
    }
    if (auto waiting = admitting_submissions_.find(submit.submission_id);
        waiting != admitting_submissions_.end()) {
      waiting->second.push_back(from);
      return std::nullopt;
    }
  }
  return AdmissionQueue::Ticket{from.identity, user, from.delimiter,
                                fmt::format("j-{:06d}", next_job_number_), wall_ms,
                                submit.submission_id};
}

void JobControl::Queued(const AdmissionQueue::Ticket& ticket, const Status& pushed, Outbox& out) {
  if (!pushed.ok()) {
    out.Error({ticket.identity, ticket.delimiter}, pushed, wire::MessageType::kSubmitJob);
    return;
  }
  if (!ticket.submission_id.empty()) admitting_submissions_[ticket.submission_id];
  ++next_job_number_;
}

void JobControl::AnswerDuplicates(const std::string& submission_id, const wire::SubmitReply* reply,
                                  const Status& error, Outbox& out) {
  auto waiting = admitting_submissions_.find(submission_id);
  if (waiting == admitting_submissions_.end()) return;
  for (const ClientRef& d : waiting->second) {
    if (reply == nullptr) {
      out.Error(d, error, wire::MessageType::kSubmitJob);
      continue;
    }
    wire::SubmitReply again = *reply;
    again.existing = again.ok;  // the same job, found rather than made
    out.Reply(d, wire::Encode(again));
  }
  admitting_submissions_.erase(waiting);
}

void JobControl::Admitted(AdmissionQueue::Done& d, Outbox& out) {
  const AdmissionQueue::Ticket& t = d.ticket;
  const ClientRef from{t.identity, t.delimiter};
  if (!d.admitted.ok()) {
    if (d.admitted.status().code() != StatusCode::kInvalidArgument) {
      out.Error(from, d.admitted.status(), wire::MessageType::kSubmitJob);
      AnswerDuplicates(t.submission_id, nullptr, d.admitted.status(), out);
      return;
    }
    // The spec's own fault: the client shows the diagnostics (bad input).
    wire::SubmitReply reply;
    reply.ok = false;
    reply.error = d.admitted.status().message();
    out.Reply(from, wire::Encode(reply));
    AnswerDuplicates(t.submission_id, &reply, Status::Ok(), out);
    return;
  }
  AdmittedJob& admitted = *d.admitted;
  const job::JobGraph& graph = admitted.job->graph();
  if (const std::string busy = RunDirHolder(graph); !busy.empty()) {
    // A pinned run directory is one run's at a time: two would overwrite each other's files.
    wire::SubmitReply reply;
    reply.ok = false;
    reply.error = fmt::format(
        "{}: run_dir '{}' ({}) is in use by running job {}: wait for it or cancel it, or drop "
        "run_dir so that each run gets its own directory",
        graph.source_file, graph.run_dir, graph.workdir, busy);
    io::RemoveQuietly(job::WorkdirMarkerPath(graph.workdir, admitted.record.id));
    out.Reply(from, wire::Encode(reply));
    AnswerDuplicates(t.submission_id, &reply, Status::Ok(), out);
    return;
  }
  admitted.record.submission_id = t.submission_id;
  if (Status stored = ledger_.JobAdmitted(admitted.record, *admitted.job, t.user); !stored.ok()) {
    // Ours, not the spec's (a full disk): a runtime failure with its own code.
    const Status why = stored.WithContext("cannot admit the job: the state cannot be written");
    out.Error(from, why, wire::MessageType::kSubmitJob);
    AnswerDuplicates(t.submission_id, nullptr, why, out);
    return;
  }
  wire::SubmitReply reply;
  reply.ok = true;
  reply.job_id = admitted.record.id;
  if (!t.submission_id.empty()) {
    job_of_submission_[t.submission_id] = reply.job_id;
    submission_of_job_[reply.job_id] = t.submission_id;
  }
  Logger("coordinator")->info("job {} ({}) submitted{}: {} tasks", reply.job_id,
                              admitted.record.name, t.user.empty() ? "" : " by " + t.user,
                              admitted.job->table().size());
  scheduler_.AddJob(std::move(admitted.job));
  out.Reply(from, wire::Encode(reply));
  AnswerDuplicates(t.submission_id, &reply, Status::Ok(), out);
}

void JobControl::OnStatus(const ClientRef& from, const wire::StatusRequest& req, int64_t now_ms,
                          Outbox& out) {
  const JobState* job = req.job_id.empty() ? nullptr : scheduler_.FindJob(req.job_id);
  if (req.wait_ms > 0 && job != nullptr && !job->finished()) {
    waiters_.push_back({from, req.job_id, now_ms + std::min<uint32_t>(req.wait_ms, kMaxWaitMs)});
    return;
  }
  SendStatus(from, req, now_ms, out);
}

void JobControl::SendStatus(const ClientRef& to, const wire::StatusRequest& req, int64_t now_ms,
                            Outbox& out) {
  // What a client sees as done is durable: flush before answering.
  ledger_.PersistPhases();
  ledger_.Flush(now_ms);
  wire::StatusReply reply;
  reply.jobs = CollectJobs(req.job_id, req.states, req.limit);
  if (!req.job_id.empty() && reply.jobs.empty()) {
    out.Error(to, NotFound("no job " + req.job_id), wire::MessageType::kStatusRequest);
    return;
  }
  reply.coordinator = stats_();
  out.Reply(to, wire::Encode(reply));
}

void JobControl::AnswerWaiters(bool all_due, int64_t now_ms, Outbox& out) {
  if (waiters_.empty()) return;
  std::vector<Waiter> still;
  for (auto& w : waiters_) {
    const JobState* job = scheduler_.FindJob(w.job_id);
    if (all_due || job == nullptr || job->finished() || now_ms >= w.deadline_ms) {
      wire::StatusRequest req;
      req.job_id = w.job_id;
      SendStatus(w.to, req, now_ms, out);
    } else {
      still.push_back(std::move(w));
    }
  }
  waiters_.swap(still);
}

wire::JobStatus JobControl::Live(const JobState& job) const {
  // As status shows a job this coordinator holds: finished in memory but not yet on disk, it is
  // not finished until a restart would agree.
  wire::JobStatus st = scheduler_.Status(job);
  const std::optional<JobPhase> persisted = ledger_.persisted_phase(job.id());
  if (job.finished() && persisted && *persisted != job.phase()) {
    st.state = *persisted;
    st.finished_ms = 0;
  }
  if (auto sid = submission_of_job_.find(job.id()); sid != submission_of_job_.end()) {
    st.submission_id = sid->second;
  }
  return st;
}

std::vector<wire::JobStatus> JobControl::CollectJobs(const std::string& job_id,
                                                     const std::vector<JobPhase>& states,
                                                     uint32_t limit) {
  const auto wanted = [&](JobPhase phase) {
    return states.empty() || std::find(states.begin(), states.end(), phase) != states.end();
  };
  std::vector<wire::JobStatus> jobs;
  if (!job_id.empty()) {
    if (const JobState* job = scheduler_.FindJob(job_id)) {
      jobs.push_back(Live(*job));
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
    if (!job) continue;  // evicted: the store lists it
    if (!wanted(job->phase())) continue;
    mine.push_back(job.get());
  }
  std::sort(mine.begin(), mine.end(), [&](const JobState* a, const JobState* b) {
    return newer(a->facts().submitted_ms, a->id(), b->facts().submitted_ms, b->id());
  });
  if (limit > 0 && mine.size() > limit) mine.resize(limit);
  // The newest of the state's other jobs: enough that `limit` are left after those it holds
  // that this coordinator runs (they are in both).
  std::vector<store::JobRecord> stored;
  const uint32_t ask = limit == 0 ? 0 : limit + static_cast<uint32_t>(scheduler_.jobs().size());
  std::vector<std::string> state_names;
  for (JobPhase phase : states) state_names.emplace_back(JobPhaseName(phase));
  if (Result<std::vector<store::JobRecord>> rows = ledger_.store().ListJobs(state_names, ask);
      rows.ok()) {
    stored = std::move(*rows);
  } else {
    Logger("coordinator")->warn("cannot list the state's jobs: {}", rows.status().message());
  }
  std::erase_if(stored, [this](const store::JobRecord& r) { return scheduler_.FindJob(r.id) != nullptr; });
  size_t i = 0, j = 0;
  while ((i < mine.size() || j < stored.size()) && (limit == 0 || jobs.size() < limit)) {
    const bool take_mine =
        j == stored.size() ||
        (i < mine.size() && newer(mine[i]->facts().submitted_ms, mine[i]->id(),
                                  stored[j].submitted_ms, stored[j].id));
    if (take_mine) {
      jobs.push_back(Live(*mine[i++]));
    } else {
      jobs.push_back(SummaryOf(stored[j++]));
    }
  }
  // A job whose in-memory state lags its filter (finished, not yet on disk) shows its
  // persisted state: keep the filter honest.
  std::erase_if(jobs, [&](const wire::JobStatus& st) { return !wanted(st.state); });
  return jobs;
}

std::optional<wire::JobStatus> JobControl::StoredSummary(const std::string& job_id) {
  Result<std::optional<store::JobRecord>> rec = ledger_.store().LoadJob(job_id);
  if (!rec.ok()) {
    Logger("coordinator")->warn("cannot read job {} from the state: {}", job_id,
                                rec.status().message());
    return std::nullopt;
  }
  if (!rec->has_value()) return std::nullopt;
  wire::JobStatus summary = SummaryOf(**rec);
  // Its nodes, replayed from its admitted plan and its commits (nothing on disk is read but the
  // state, nothing is written): `coupler logs JOB NODE TASK` finds their files. A job admitted
  // before plans were kept shows its summary alone.
  if ((*rec)->plan.empty()) return summary;
  Result<AdmittedPlan> plan = DecodeAdmittedPlan((*rec)->plan);
  Result<store::TaskHistory> history = ledger_.store().LoadTaskHistory(job_id);
  if (!plan.ok() || !history.ok()) return summary;
  std::unique_ptr<JobState> job = JobFromPlan(job_id, std::move(*plan));
  for (const store::CommittedTask& c : history->commits) {
    if (c.task_id < job->table().size()) job->RestoreDone(c.task_id, c.attempt + 1);
  }
  summary.nodes = scheduler_.Status(*job).nodes;
  const bool ended = job::IsFinished(summary.state);
  for (wire::NodeStatus& n : summary.nodes) {
    // What did not finish ended with the job (failed or cancelled); its reason is the job's.
    if (ended && n.state != job::NodePhase::kDone) {
      n.state = summary.state == JobPhase::kFailed ? job::NodePhase::kFailed
                                                   : job::NodePhase::kCancelled;
    }
    n.tasks_running = 0;
    n.tasks_prefetched = 0;
  }
  return summary;
}

bool JobControl::MayControl(const Principal& who, const std::string& owner) const {
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

void JobControl::OnCancel(const ClientRef& from, const Principal& who, const wire::CancelJob& req,
                          Outbox& out) {
  const std::string user = who.label();
  JobState* job = scheduler_.FindJob(req.job_id);
  const std::optional<wire::JobStatus> summary =
      job == nullptr ? StoredSummary(req.job_id) : std::nullopt;
  if (job == nullptr && !summary) {
    out.Error(from, NotFound("no job " + req.job_id), wire::MessageType::kCancelJob);
    return;
  }
  const std::string owner = job != nullptr ? job->facts().submitted_by : summary->submitted_by;
  if (!MayControl(who, owner)) {
    Logger("coordinator")->warn("refused to cancel job {} for key '{}': it is not the submitter "
                                "nor an admin", req.job_id, user);
    out.Error(from,
              PermissionDenied("job " + req.job_id + " was submitted by '" + owner +
                               "': only its submitter or an admin key (authorized/admins/) may "
                               "cancel it"),
              wire::MessageType::kCancelJob);
    return;
  }
  if (job == nullptr) {
    out.Reply(from, Ack(wire::MessageType::kCancelJob, "job already finished"));
    return;
  }
  const bool was_finished = job->finished();
  const std::string cancel = wire::Encode(req);
  for (const auto& worker : scheduler_.Cancel(req.job_id)) out.ToWorker(worker, cancel);
  if (!was_finished) ledger_.JobCancelled(req.job_id, user);
  ledger_.PersistPhases();
  out.Reply(from, Ack(wire::MessageType::kCancelJob, was_finished ? "job already finished" : "cancelled"));
}

std::string JobControl::RunDirHolder(const job::JobGraph& graph) const {
  if (graph.run_dir.empty()) return "";  // runs/{job_id}: never another job's
  for (const auto& other : scheduler_.jobs()) {
    if (other && !other->finished() && other->graph().workdir == graph.workdir) return other->id();
  }
  return "";
}

std::optional<JobControl::RetryTicket> JobControl::OnRetry(const ClientRef& from,
                                                          const Principal& who,
                                                          const wire::RetryJob& req, Outbox& out) {
  const std::string user = who.label();
  auto refuse = [&](const Status& why) -> std::optional<RetryTicket> {
    out.Error(from, why, wire::MessageType::kRetryJob);
    return std::nullopt;
  };
  ledger_.PersistPhases();  // what it says about the job's state is what the store holds
  const JobState* job = scheduler_.FindJob(req.job_id);
  const std::optional<wire::JobStatus> summary =
      job == nullptr ? StoredSummary(req.job_id) : std::nullopt;
  if (job == nullptr && !summary) return refuse(NotFound("no job " + req.job_id));
  const std::string owner = job != nullptr ? job->facts().submitted_by : summary->submitted_by;
  if (!MayControl(who, owner)) {
    Logger("coordinator")->warn("refused to retry job {} for key '{}': it is not the submitter "
                                "nor an admin", req.job_id, user);
    return refuse(PermissionDenied("job " + req.job_id + " was submitted by '" + owner +
                                   "': only its submitter or an admin key (authorized/admins/) "
                                   "may retry it"));
  }
  const JobPhase phase = job != nullptr ? job->phase() : summary->state;
  if (!job::IsFinished(phase)) {
    return refuse(InvalidArgument("job " + req.job_id + " is " + std::string(JobPhaseName(phase)) +
                                  ": only a failed or cancelled job can be retried (cancel it "
                                  "first, or wait for it)"));
  }
  if (phase == JobPhase::kSucceeded) {
    return refuse(InvalidArgument("job " + req.job_id +
                                  " succeeded: nothing to retry (submit the spec again; --reuse "
                                  "skips the nodes that did not change)"));
  }
  if (job != nullptr && ledger_.persisted_phase(req.job_id) != job->phase()) {
    return refuse(Unavailable("job " + req.job_id + "'s end is not on disk yet: try again"));
  }
  if (retries_in_flight_.count(req.job_id) != 0) {
    return refuse(Unavailable("a retry of job " + req.job_id + " is under way"));
  }
  // Held from the retention sweeper until the job's new row is written (or the retry refused).
  std::string removal;
  if (run_dir_claims_ != nullptr && !run_dir_claims_->BeginRetry(req.job_id, &removal)) {
    return refuse(InvalidArgument("job " + req.job_id + " cannot be retried: " + removal +
                                  "; submit its spec again"));
  }
  retries_in_flight_[req.job_id] = job == nullptr;
  RetryTicket ticket;
  ticket.ticket = AdmissionQueue::Ticket{from.identity, user, from.delimiter, req.job_id, 0, ""};
  // Finished before this start, or its tasks released: replayed from the store as a restart
  // would, off the loop.
  ticket.rebuild = job == nullptr || job->compacted();
  return ticket;
}

void JobControl::RetryLoaded(AdmissionQueue::RetryDone& done, Outbox& out) {
  const AdmissionQueue::Ticket& t = done.ticket;
  const ClientRef from{t.identity, t.delimiter};
  const std::string& id = t.job_id;
  auto in_flight = retries_in_flight_.find(id);
  const bool was_absent = in_flight != retries_in_flight_.end() && in_flight->second;
  if (in_flight != retries_in_flight_.end()) retries_in_flight_.erase(in_flight);
  struct ClaimRelease {
    RunDirClaims* claims;
    const std::string& id;
    ~ClaimRelease() {
      if (claims != nullptr) claims->EndRetry(id);
    }
  } release{run_dir_claims_, id};
  auto refuse = [&](const Status& why) { out.Error(from, why, wire::MessageType::kRetryJob); };
  if (!done.load.ok()) return refuse(done.load.status().WithContext("cannot retry"));
  const store::JobRecord& rec = done.load->record;
  std::unique_ptr<JobState> restored = std::move(done.load->rebuilt);
  JobState* job = restored != nullptr ? restored.get() : scheduler_.FindJob(id);
  if (job == nullptr || job->compacted()) {
    return refuse(Unavailable("job " + id + " left memory while its retry was read: try again"));
  }
  // One stat on the loop: a run directory removed (by a retention before this start, or by
  // hand) would have every worker refuse the job's tasks.
  if (struct stat st {}; ::lstat(job::WorkdirMarkerPath(job->graph().workdir, id).c_str(), &st) != 0) {
    return refuse(InvalidArgument("job " + id + " cannot be retried: its run directory " +
                                  job->graph().workdir + " is gone (removed by retention or by "
                                  "hand); submit its spec again"));
  }
  if (const std::string busy = RunDirHolder(job->graph()); !busy.empty()) {
    return refuse(InvalidArgument("job " + id + "'s run_dir '" + job->graph().run_dir + "' (" +
                                  job->graph().workdir + ") is in use by running job " + busy +
                                  ": retry it once that one has finished"));
  }
  job->Retry();
  store::JobRecord updated = rec;
  updated.extra = ExtraAfterRetry(rec.extra, *job);
  updated.state = std::string(JobPhaseName(job->phase()));
  updated.error.clear();
  updated.finished_ms = 0;
  const std::string earlier = restored != nullptr && was_absent ? rec.state : std::string();
  if (Status s = ledger_.JobRetried(updated, *job, earlier); !s.ok()) {
    return refuse(s.WithContext("cannot retry: the state cannot be written"));
  }
  const uint64_t left = job->table().size() - job->done();
  const uint64_t total = job->table().size();
  if (restored != nullptr) scheduler_.AddJob(std::move(restored));
  Logger("coordinator")->info("job {} retried{}: {} of {} tasks to run again", id,
                              t.user.empty() ? "" : " by " + t.user, left, total);
  out.Reply(from, Ack(wire::MessageType::kRetryJob,
                      fmt::format("retrying {}: {} of {} tasks to run", id, left, total)));
}

}  // namespace coupler::coordinator
