// JobControl: what clients ask of jobs — admit (with retried submissions answered once),
// status (with long polls), cancel, retry — and who may ask it. It takes requests, who sent
// them and the clock, and puts its answers and the messages its decisions send to workers in
// an Outbox; the event loop routes them. No socket here, and no file but the state store's
// rows, read through the Ledger: tested like the Scheduler, without a coordinator.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "coordinator/admission_queue.h"
#include "coordinator/ledger.h"
#include "coordinator/outbox.h"
#include "coordinator/principal.h"
#include "coordinator/run_dir_claims.h"
#include "coordinator/scheduler.h"
#include "coordinator/zap_handler.h"
#include "runtime/status.h"
#include "runtime/wire/messages.h"

namespace coupler::coordinator {

class JobControl {
 public:
  // `stats`: the coordinator's counters, for status replies (the loop's and the scheduler's).
  JobControl(Scheduler& scheduler, Ledger& ledger, std::function<wire::CoordinatorStats()> stats);

  // Admin rights are decided by the allow-lists' admins; null (--insecure): nobody is told apart.
  void set_allow_lists(const AllowLists* lists) { allow_lists_ = lists; }
  // With retention on (--gc-older-than): a retry first claims the job's run directory from the
  // sweeper (run_dir_claims.h). Null: no sweeper runs.
  void set_run_dir_claims(RunDirClaims* claims) { run_dir_claims_ = claims; }

  // A job of an earlier start, restored: a retried submission of it finds it.
  void Restored(const store::JobRecord& record);
  // Jobs the scheduler let go of: a retried submission of one finds it in the store.
  void JobsEvicted(const std::vector<std::pair<std::string, JobPhase>>& evicted);

  // ---- admission
  // A submission: answered now (a retry of a submission already made or being admitted, a
  // store that cannot write), or a ticket for the admission thread.
  std::optional<AdmissionQueue::Ticket> OnSubmit(const ClientRef& from, const std::string& user,
                                                 const wire::SubmitJob& submit, int64_t wall_ms,
                                                 Outbox& out);
  // The ticket went to the admission thread (`pushed` OK), or could not (its error answers).
  void Queued(const AdmissionQueue::Ticket& ticket, const Status& pushed, Outbox& out);
  // The admission thread's verdict on a ticket: the job is recorded and scheduled, or refused.
  void Admitted(AdmissionQueue::Done& done, Outbox& out);

  // ---- status
  void OnStatus(const ClientRef& from, const wire::StatusRequest& req, int64_t now_ms, Outbox& out);
  // Answers long polls whose job finished or whose wait ended (all of them when `all_due`).
  void AnswerWaiters(bool all_due, int64_t now_ms, Outbox& out);
  // The job with `job_id`, or (job_id empty) the newest `limit` jobs (0: all) in one of
  // `states` (none: any), as status shows them, newest first. Only the jobs listed are
  // rendered; finished ones of earlier starts come from the store.
  std::vector<wire::JobStatus> CollectJobs(const std::string& job_id,
                                           const std::vector<JobPhase>& states = {},
                                           uint32_t limit = 0);

  // ---- control
  void OnCancel(const ClientRef& from, const Principal& who, const wire::CancelJob& req, Outbox& out);
  // A retry is checked here (who, which state), then its job's rows are read on the intake
  // thread: the ticket to hand it (AdmissionQueue::PushRetry), or nullopt when refused (the
  // refusal is in `out`). RetryLoaded finishes it with what was read.
  struct RetryTicket {
    AdmissionQueue::Ticket ticket;
    bool rebuild = false;  // the job is not in memory: rebuild it from its rows
  };
  std::optional<RetryTicket> OnRetry(const ClientRef& from, const Principal& who,
                                     const wire::RetryJob& req, Outbox& out);
  void RetryLoaded(AdmissionQueue::RetryDone& done, Outbox& out);
  // May `who` act on a job submitted by `owner` (a principal's label; empty: admins only)?
  bool MayControl(const Principal& who, const std::string& owner) const;

 private:
  void SendStatus(const ClientRef& to, const wire::StatusRequest& req, int64_t now_ms, Outbox& out);
  // Answers the retries of `submission_id` that waited for its admission: with `reply` (a
  // made job becomes `existing`), or with `error` when `reply` is null.
  void AnswerDuplicates(const std::string& submission_id, const wire::SubmitReply* reply,
                        const Status& error, Outbox& out);
  // The unfinished job holding the pinned run directory `graph` asks for; "" if none.
  std::string RunDirHolder(const job::JobGraph& graph) const;
  // A job this coordinator does not run: its summary row from the store, or nullopt.
  std::optional<wire::JobStatus> StoredSummary(const std::string& job_id);
  // A job this coordinator runs, as status shows it.
  wire::JobStatus Live(const JobState& job) const;

  Scheduler& scheduler_;
  Ledger& ledger_;
  std::function<wire::CoordinatorStats()> stats_;
  const AllowLists* allow_lists_ = nullptr;
  RunDirClaims* run_dir_claims_ = nullptr;
  // Retries whose rows are being read, one per job: whether the job was absent from memory
  // (finished before this start: counted among the state's jobs until it runs again).
  std::map<std::string, bool> retries_in_flight_;
  uint64_t next_job_number_ = 0;
  // Retried submissions: the job each submission id made, and the requests waiting on one
  // still being admitted (answered when it is).
  std::map<std::string, std::string> job_of_submission_;
  std::map<std::string, std::string> submission_of_job_;
  std::map<std::string, std::vector<ClientRef>> admitting_submissions_;
  // Status requests waiting for their job to finish (long poll).
  struct Waiter {
    ClientRef to;
    std::string job_id;
    int64_t deadline_ms = 0;
  };
  std::vector<Waiter> waiters_;
};

}  // namespace coupler::coordinator
