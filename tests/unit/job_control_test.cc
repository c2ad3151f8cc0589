// JobControl without a coordinator: requests in, answers and worker messages out (an Outbox),
// over a real state store in a temporary directory and a real Scheduler.
#include "coordinator/job_control.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "coordinator/job_intake.h"
#include "runtime/wire/codec.h"
#include "tests/unit/scheduler_test_util.h"
#include "tests/unit/store_test_util.h"

namespace coupler::coordinator {
namespace {

using ::testing::HasSubstr;

constexpr const char* kSpec =
    R"({"name": "j", "nodes": [{"id": "a", "op": "noop", "params": {"tasks": 3}}]})";

// A scheduler, the ledger over a fresh state, and job control over both.
class JobControlTest : public ::testing::Test {
 protected:
  JobControlTest()
      : scheduler_(5000),
        ledger_(store::testing::OpenOrDie(dir_.str()), {dir_.str() + "/events.jsonl", 1 << 20, 1},
                scheduler_, dir_.str()),
        control_(scheduler_, ledger_, [] { return wire::CoordinatorStats{}; }) {
    EXPECT_TRUE(ledger_.Open(1).ok());
  }

  // Submits kSpec as `user` from `client` and runs its admission (as the admission thread
  // would) unless `admit` is false; returns the ticket's job id ("" if none was issued).
  std::string Submit(const std::string& client, const std::string& user,
                     const std::string& submission_id, Outbox& out, bool admit = true) {
    wire::SubmitJob submit;
    submit.spec_text = kSpec;
    submit.spec_path = "/specs/j.json";
    submit.cwd = "/specs";
    submit.submission_id = submission_id;
    std::optional<AdmissionQueue::Ticket> ticket = control_.OnSubmit({client}, user, submit, 1000, out);
    if (!ticket) return "";
    control_.Queued(*ticket, Status::Ok(), out);
    if (admit) Admit(*ticket, submit, out);
    return ticket->job_id;
  }

  void Admit(const AdmissionQueue::Ticket& ticket, const wire::SubmitJob& submit, Outbox& out) {
    AdmissionQueue::Done done{ticket, AdmitJob(submit, ticket.job_id, ticket.submitted_ms,
                                               ticket.user, IntakeContext{})};
    control_.Admitted(done, out);
  }

  static wire::Message Decoded(const std::string& payload) {
    Result<wire::Message> m = wire::Decode(payload);
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    return m.ok() ? *m : wire::Message{};
  }

  store::testing::TempDir dir_;
  Scheduler scheduler_;
  Ledger ledger_;
  JobControl control_;
};

// A client that lost its reply submits again with the same submission id while the first is
// still being admitted: it is answered once the first is, with the same job, as found.
TEST_F(JobControlTest, ARetriedSubmissionWaitsForTheFirstAndGetsTheSameJob) {
  Outbox out;
  wire::SubmitJob submit;
  submit.spec_text = kSpec;
  submit.spec_path = "/specs/j.json";
  submit.cwd = "/specs";
  submit.submission_id = "s-1";
  std::optional<AdmissionQueue::Ticket> first = control_.OnSubmit({"c1"}, "alice", submit, 1000, out);
  ASSERT_TRUE(first);
  control_.Queued(*first, Status::Ok(), out);
  EXPECT_FALSE(control_.OnSubmit({"c2"}, "alice", submit, 1001, out));
  EXPECT_TRUE(out.clients.empty());  // the retry waits: no second ticket, no answer yet
  Admit(*first, submit, out);
  ASSERT_EQ(out.clients.size(), 2u);
  const auto made = std::get<wire::SubmitReply>(Decoded(out.clients[0].payload));
  const auto found = std::get<wire::SubmitReply>(Decoded(out.clients[1].payload));
  EXPECT_EQ(out.clients[0].to.identity, "c1");
  EXPECT_EQ(out.clients[1].to.identity, "c2");
  EXPECT_TRUE(made.ok && !made.existing);
  EXPECT_TRUE(found.ok && found.existing);
  EXPECT_EQ(made.job_id, found.job_id);
  EXPECT_EQ(scheduler_.jobs().size(), 1u);
  // Later still: answered at once from what it made.
  out = {};
  EXPECT_FALSE(control_.OnSubmit({"c3"}, "alice", submit, 1002, out));
  ASSERT_EQ(out.clients.size(), 1u);
  EXPECT_EQ(std::get<wire::SubmitReply>(Decoded(out.clients[0].payload)).job_id, made.job_id);
}

// A ticket the admission thread would not take (too many pending) is answered with its error
// and takes no job number.
TEST_F(JobControlTest, ARefusedTicketIsAnsweredAndTakesNoNumber) {
  Outbox out;
  wire::SubmitJob submit;
  submit.spec_text = kSpec;
  std::optional<AdmissionQueue::Ticket> t = control_.OnSubmit({"c1"}, "alice", submit, 1000, out);
  ASSERT_TRUE(t);
  control_.Queued(*t, Unavailable("busy"), out);
  ASSERT_EQ(out.clients.size(), 1u);
  EXPECT_EQ(std::get<wire::Error>(Decoded(out.clients[0].payload)).code,
            static_cast<uint16_t>(StatusCode::kUnavailable));
  std::optional<AdmissionQueue::Ticket> next = control_.OnSubmit({"c1"}, "alice", submit, 1000, out);
  ASSERT_TRUE(next);
  EXPECT_EQ(next->job_id, t->job_id);
}

// Only its submitter or an admin may cancel a job; a cancel reaches the workers holding its
// tasks, and the job's end is on disk before the answer.
TEST_F(JobControlTest, OnlyTheSubmitterMayCancelAndTheWorkersHoldingItsTasksAreTold) {
  Outbox out;
  const std::string id = Submit("c1", "alice", "", out);
  ASSERT_FALSE(id.empty());
  wire::RegisterWorker reg;
  reg.worker_id = "w1";
  reg.slots = 4;
  scheduler_.RegisterWorker(reg, 0, "worker");
  ASSERT_FALSE(scheduler_.Assign("w1").empty());

  out = {};
  control_.OnCancel({"c2"}, Principal::Key("mallory", "KEY-M"), wire::CancelJob{id}, out);
  ASSERT_EQ(out.clients.size(), 1u);
  const auto refused = std::get<wire::Error>(Decoded(out.clients[0].payload));
  EXPECT_EQ(refused.code, static_cast<uint16_t>(StatusCode::kPermissionDenied));
  EXPECT_THAT(refused.message, HasSubstr("submitted by 'alice'"));
  EXPECT_TRUE(out.workers.empty());
  EXPECT_FALSE(scheduler_.FindJob(id)->finished());

  out = {};
  control_.OnCancel({"c1"}, Principal::Key("alice", "KEY-A"), wire::CancelJob{id}, out);
  ASSERT_EQ(out.workers.size(), 1u);
  EXPECT_EQ(out.workers[0].worker_id, "w1");
  EXPECT_TRUE(std::holds_alternative<wire::CancelJob>(Decoded(out.workers[0].payload)));
  ASSERT_EQ(out.clients.size(), 1u);
  EXPECT_EQ(std::get<wire::Ack>(Decoded(out.clients[0].payload)).message, "cancelled");
  EXPECT_EQ(ledger_.persisted_phase(id), JobPhase::kCancelled);
}

// A long poll is answered when its job ends or its wait does, never before.
TEST_F(JobControlTest, ALongPollIsAnsweredAtItsDeadline) {
  Outbox out;
  const std::string id = Submit("c1", "", "", out);
  out = {};
  wire::StatusRequest req;
  req.job_id = id;
  req.wait_ms = 500;
  control_.OnStatus({"c9"}, req, 100, out);
  control_.AnswerWaiters(false, 599, out);
  EXPECT_TRUE(out.clients.empty());
  control_.AnswerWaiters(false, 600, out);
  ASSERT_EQ(out.clients.size(), 1u);
  const auto reply = std::get<wire::StatusReply>(Decoded(out.clients[0].payload));
  ASSERT_EQ(reply.jobs.size(), 1u);
  EXPECT_EQ(reply.jobs[0].id, id);
  EXPECT_EQ(reply.jobs[0].state, job::JobPhase::kQueued);
}

// Retry takes only a failed or cancelled job, and a job unknown is named.
TEST_F(JobControlTest, RetryRefusesAQueuedJobAndAnUnknownOne) {
  Outbox out;
  const std::string id = Submit("c1", "", "", out);
  out = {};
  control_.OnRetry({"c1"}, Principal::Insecure(), wire::RetryJob{id}, out);
  control_.OnRetry({"c1"}, Principal::Insecure(), wire::RetryJob{"j-999999"}, out);
  ASSERT_EQ(out.clients.size(), 2u);
  EXPECT_THAT(std::get<wire::Error>(Decoded(out.clients[0].payload)).message,
              HasSubstr("only a failed or cancelled job can be retried"));
  EXPECT_EQ(std::get<wire::Error>(Decoded(out.clients[1].payload)).code,
            static_cast<uint16_t>(StatusCode::kNotFound));
  // Cancelled, it may be: its row is read off the loop (the intake thread), then its tasks
  // are queued again. A second retry meanwhile is turned away.
  out = {};
  control_.OnCancel({"c1"}, Principal::Insecure(), wire::CancelJob{id}, out);
  std::optional<JobControl::RetryTicket> ticket =
      control_.OnRetry({"c1"}, Principal::Insecure(), wire::RetryJob{id}, out);
  ASSERT_TRUE(ticket);
  EXPECT_FALSE(ticket->rebuild) << "the job is in memory";
  EXPECT_EQ(ticket->ticket.job_id, id);
  EXPECT_FALSE(control_.OnRetry({"c2"}, Principal::Insecure(), wire::RetryJob{id}, out));
  AdmissionQueue::RetryDone done{ticket->ticket, ticket->rebuild,
                                 LoadForRetry(ledger_.store(), id, ticket->rebuild)};
  control_.RetryLoaded(done, out);
  ASSERT_EQ(out.clients.size(), 3u);
  EXPECT_THAT(std::get<wire::Error>(Decoded(out.clients[1].payload)).message,
              HasSubstr("is under way"));
  EXPECT_EQ(out.clients[2].to.identity, "c1");
  EXPECT_THAT(std::get<wire::Ack>(Decoded(out.clients[2].payload)).message,
              HasSubstr("3 of 3 tasks to run"));
  // What is on disk is what it is now: unfinished, so a restart runs it again.
  const JobState* job = scheduler_.FindJob(id);
  ASSERT_NE(job, nullptr);
  EXPECT_FALSE(job->finished());
  EXPECT_EQ(ledger_.persisted_phase(id), job->phase());
}

// A finished job evicted from memory (Scheduler::EvictFinished) is answered from the store:
// its state, its nodes replayed from its admitted plan and commits; its submission id still
// names it; it is still counted.
TEST_F(JobControlTest, AnEvictedJobIsAnsweredFromTheStore) {
  Outbox out;
  const std::string id = Submit("c1", "alice", "s-9", out);
  wire::RegisterWorker reg;
  reg.worker_id = "w1";
  reg.slots = 4;
  scheduler_.RegisterWorker(reg, 0, "worker");
  for (const wire::TaskSpec& t : scheduler_.Assign("w1")) {
    const wire::TaskOutcome o = testing::OutcomeOf(t);
    ledger_.Outcome("w1", o, scheduler_.OnOutcome("w1", o));
  }
  ledger_.PersistPhases();
  ledger_.Flush(0);
  const auto evicted = scheduler_.EvictFinished(0);
  ASSERT_EQ(evicted.size(), 1u);
  ledger_.JobsEvicted(evicted);
  control_.JobsEvicted(evicted);
  ASSERT_EQ(scheduler_.FindJob(id), nullptr);

  out = {};
  wire::StatusRequest req;
  req.job_id = id;
  control_.OnStatus({"c1"}, req, 0, out);
  ASSERT_EQ(out.clients.size(), 1u);
  const auto reply = std::get<wire::StatusReply>(Decoded(out.clients[0].payload));
  ASSERT_EQ(reply.jobs.size(), 1u);
  EXPECT_EQ(reply.jobs[0].state, job::JobPhase::kSucceeded);
  ASSERT_EQ(reply.jobs[0].nodes.size(), 1u);
  EXPECT_EQ(reply.jobs[0].nodes[0].tasks_done, 3u);
  EXPECT_EQ(ledger_.CountJobs()["succeeded"], 1u);
  wire::SubmitJob again;
  again.spec_text = kSpec;
  again.submission_id = "s-9";
  out = {};
  EXPECT_FALSE(control_.OnSubmit({"c2"}, "alice", again, 2000, out));
  ASSERT_EQ(out.clients.size(), 1u);
  EXPECT_EQ(std::get<wire::SubmitReply>(Decoded(out.clients[0].payload)).job_id, id);
}

}  // namespace
}  // namespace coupler::coordinator
