// A restarted coordinator adopts the attempts its workers still hold (Scheduler::AwaitAdoption,
// RegisterWorker's `holding`): they run on and commit once, under their own attempt numbers;
// what no worker reports by the deadline runs again, and what a worker holds that was not in
// flight is released.
#include <gtest/gtest.h>

#include "coordinator/scheduler.h"
#include "tests/unit/scheduler_test_util.h"

namespace coupler::coordinator {
namespace {

using testing::MakeJob;

constexpr const char* kFour = "name: n\nnodes:\n  - {id: a, op: noop, params: {tasks: 4}}\n";

wire::RegisterWorker Worker(const std::string& id, uint32_t slots,
                            std::vector<wire::HeldAttempt> holding = {}) {
  wire::RegisterWorker w;
  w.worker_id = id;
  w.slots = slots;
  w.holding = std::move(holding);
  return w;
}

wire::HeldAttempt Held(uint64_t task, uint32_t attempt, bool started) {
  return {{"j1", task, attempt}, started};
}

wire::TaskOutcome Ok(uint64_t task, uint32_t attempt) {
  wire::TaskOutcome o;
  o.job_id = "j1";
  o.task_id = task;
  o.attempt = attempt;
  o.ok = true;
  return o;
}

// What a restart restores: tasks 0 and 1 were sent (attempt 0) and had not ended; task 2 was
// sent twice (attempt 0 failed, attempt 1 in flight); task 3 was never sent.
Scheduler Restored(int64_t deadline_ms) {
  auto job = MakeJob("j1", kFour);
  job->RestoreAttempts(0, 1);
  job->RestoreAttempts(1, 1);
  job->RestoreAttempts(2, 2);
  Scheduler s(5000);
  s.AddJob(std::move(job));
  // Sent before the worker was recorded with them (an older state): any worker may report them.
  const auto abandoned =
      s.AwaitAdoption("j1", {{0, 0, "", ""}, {1, 0, "", ""}, {2, 1, "", ""}}, deadline_ms);
  EXPECT_TRUE(abandoned.empty());
  return s;
}

TEST(AdoptionTest, AttemptsInFlightAtARestartWaitAndAreNotSentAgain) {
  Scheduler s = Restored(10'000);
  EXPECT_EQ(s.awaiting_adoption(), 3u);
  const JobState& job = *s.FindJob("j1");
  EXPECT_EQ(job.running(), 3u);
  EXPECT_EQ(job.ready_count(), 1u);
  s.RegisterWorker(Worker("w1", 8), 0);
  const auto sent = s.Assign("w1");
  ASSERT_EQ(sent.size(), 1u);  // only the task never sent
  EXPECT_EQ(sent[0].task_id, 3u);
  EXPECT_EQ(sent[0].attempt, 0u);
}

TEST(AdoptionTest, AWorkerReportingItsAttemptsKeepsThemAndTheirResultsCommit) {
  Scheduler s = Restored(10'000);
  const Registration r =
      s.RegisterWorker(Worker("w1", 1, {Held(0, 0, true), Held(2, 1, false)}), 0);
  ASSERT_EQ(r.adopted.size(), 2u);
  EXPECT_TRUE(r.release.empty());
  EXPECT_TRUE(r.adopted[0].started);
  EXPECT_FALSE(s.AwaitsAdoption("j1", 0, 0));
  EXPECT_TRUE(s.AwaitsAdoption("j1", 1, 0));
  const WorkerEntry& w = *s.registry().Find("w1");
  EXPECT_EQ(w.inflight.size(), 2u);
  EXPECT_EQ(w.started(), 1u);
  EXPECT_EQ(w.credit(), 0u);  // 1 slot, both adopted attempts count against it
  EXPECT_EQ(s.OnOutcome("w1", Ok(0, 0)), OutcomeKind::kCommitted);
  EXPECT_EQ(s.OnOutcome("w1", Ok(2, 1)), OutcomeKind::kCommitted);
  const JobState& job = *s.FindJob("j1");
  EXPECT_EQ(job.done(), 2u);
  EXPECT_EQ(job.attempts(0), 1u) << "an adopted attempt is not a new attempt";
}

TEST(AdoptionTest, WhatAWorkerHoldsThatWasNotInFlightIsReleased) {
  Scheduler s = Restored(10'000);
  // Attempt 0 of task 2 is not its live attempt (1); attempt 1 of task 3 is not the number it
  // waits at (0); job j9 is unknown. Another worker cannot take an attempt adopted already.
  const Registration r = s.RegisterWorker(
      Worker("w1", 4, {Held(2, 0, true), Held(3, 1, false), {{"j9", 0, 0}, true}, Held(0, 0, true)}),
      0);
  ASSERT_EQ(r.adopted.size(), 1u);
  EXPECT_EQ(r.adopted[0].attempt.task_id, 0u);
  ASSERT_EQ(r.release.size(), 3u);
  const Registration again = s.RegisterWorker(Worker("w2", 4, {Held(0, 0, true)}), 0);
  EXPECT_TRUE(again.adopted.empty());
  ASSERT_EQ(again.release.size(), 1u);
  // A result from the worker that did not get the attempt is not the live attempt's.
  EXPECT_EQ(s.OnOutcome("w2", Ok(0, 0)), OutcomeKind::kStale);
  EXPECT_EQ(s.OnOutcome("w1", Ok(0, 0)), OutcomeKind::kCommitted);
}

TEST(AdoptionTest, AttemptsNobodyReportsRunAgainUnderANewNumberAfterTheDeadline) {
  Scheduler s = Restored(10'000);
  s.RegisterWorker(Worker("w1", 8, {Held(0, 0, true)}), 0);
  EXPECT_TRUE(s.AbandonUnadopted(9'999).empty());
  const std::vector<LostAttempt> abandoned = s.AbandonUnadopted(10'000);
  ASSERT_EQ(abandoned.size(), 2u);
  EXPECT_EQ(abandoned[0].task_id, 1u);
  EXPECT_EQ(abandoned[1].task_id, 2u);
  EXPECT_EQ(s.awaiting_adoption(), 0u);
  const auto sent = s.Assign("w1");
  ASSERT_EQ(sent.size(), 3u);  // 1 and 2 again, then 3
  EXPECT_EQ(sent[0].task_id, 2u);
  EXPECT_EQ(sent[0].attempt, 2u) << "the abandoned attempt's number is never reused";
  EXPECT_EQ(sent[1].task_id, 1u);
  EXPECT_EQ(sent[1].attempt, 1u);
  // A late report of an abandoned attempt is released, its result stale.
  const Registration late = s.RegisterWorker(Worker("w2", 1, {Held(1, 0, true)}), 0);
  EXPECT_EQ(late.release.size(), 1u);
  EXPECT_EQ(s.OnOutcome("w2", Ok(1, 0)), OutcomeKind::kStale);
}

// A gang whose ranks all ran on its leader is awaited like a loose task and, adopted, runs on
// with its slots reserved on the leader until its outcome commits it. One whose ranks spanned
// workers (their daemons hung off the relay the restart cut), or sent before ranks were
// recorded, is abandoned at once: retried from its checkpoint.
TEST(AdoptionTest, AGangOnItsLeaderAloneIsAdoptedAndOneThatSpannedWorkersIsNot) {
  const std::string spec = "name: g\nnodes:\n  - id: t\n    op: mpi_exec\n    ranks: 2\n"
                           "    params: {command: \"true\"}\n";
  auto gang_job = MakeJob("g1", spec);
  gang_job->RestoreAttempts(0, 1);
  Scheduler s(5000);
  s.AddJob(std::move(gang_job));
  ASSERT_TRUE(s.AwaitAdoption("g1", {{0, 0, "w1", "k1", 2}}, 10'000).empty());
  EXPECT_EQ(s.awaiting_adoption(), 1u);
  const Registration r =
      s.RegisterWorker(Worker("w1", 2, {{{"g1", 0, 0}, true}}), 0, "k1");
  ASSERT_EQ(r.adopted.size(), 1u);
  EXPECT_TRUE(r.release.empty());
  EXPECT_EQ(s.registry().Find("w1")->gang_ranks, 2u) << "its slots stay the gang's";
  EXPECT_EQ(s.registry().Find("w1")->credit(), 0u);
  EXPECT_TRUE(s.FindRunningGang("g1", 0).has_value());
  wire::TaskOutcome done;
  done.job_id = "g1";
  done.task_id = 0;
  done.attempt = 0;
  done.ok = true;
  EXPECT_EQ(s.OnOutcome("w1", done), OutcomeKind::kCommitted);
  EXPECT_EQ(s.registry().Find("w1")->gang_ranks, 0u);

  for (const store::SentAttempt& sent : {store::SentAttempt{0, 0, "w1", "k1", 1},  // 1 of 2 here
                                         store::SentAttempt{0, 0, "w1", "k1", 0},  // older row
                                         store::SentAttempt{0, 0, "", "", 2}}) {   // no worker
    auto spanned = MakeJob("g2", spec);
    spanned->RestoreAttempts(0, 1);
    Scheduler t(5000);
    t.AddJob(std::move(spanned));
    EXPECT_EQ(t.AwaitAdoption("g2", {sent}, 10'000).size(), 1u);
    EXPECT_EQ(t.awaiting_adoption(), 0u);
    EXPECT_EQ(t.FindJob("g2")->task_state(0), TaskState::kReady);
  }
}

// A cancelled job's attempts are released, whoever reports them.
TEST(AdoptionTest, ACancelledJobReleasesItsAttempts) {
  Scheduler c = Restored(10'000);
  c.Cancel("j1");
  const Registration r = c.RegisterWorker(Worker("w1", 4, {Held(0, 0, true)}), 0);
  EXPECT_TRUE(r.adopted.empty());
  EXPECT_EQ(r.release.size(), 1u);
  EXPECT_TRUE(c.AbandonUnadopted(10'000).empty()) << "a cancelled job's attempts run nowhere";
}

// An attempt is taken back only from the worker it was sent to, with the key it had: another
// worker (or another key under that id) naming it is told to let it go; and the worker it was
// sent to, back without it, has it run again at once rather than after the wait.
TEST(AdoptionTest, OnlyTheWorkerItWasSentToTakesAnAttemptBackAndItsSilenceEndsTheWait) {
  auto job = MakeJob("j1", kFour);
  for (uint64_t t = 0; t < 3; ++t) job->RestoreAttempts(t, 1);
  Scheduler s(5000);
  s.AddJob(std::move(job));
  ASSERT_TRUE(s.AwaitAdoption("j1", {{0, 0, "w1", "k1"}, {1, 0, "w1", "k1"}, {2, 0, "w2", "k2"}},
                              10'000)
                  .empty());
  const Registration thief = s.RegisterWorker(Worker("w9", 4, {Held(0, 0, true)}), 0, "k1");
  EXPECT_TRUE(thief.adopted.empty());
  EXPECT_EQ(thief.release.size(), 1u);
  const Registration other_key = s.RegisterWorker(Worker("w2", 4, {Held(2, 0, true)}), 0, "k9");
  EXPECT_TRUE(other_key.adopted.empty()) << "w2's id under another key";
  EXPECT_EQ(other_key.release.size(), 1u);
  // w1 comes back holding task 0 only: 0 is adopted, 1 (never reported) runs again now.
  const Registration back = s.RegisterWorker(Worker("w1", 4, {Held(0, 0, true)}), 0, "k1");
  ASSERT_EQ(back.adopted.size(), 1u);
  ASSERT_EQ(back.undelivered.size(), 1u);
  EXPECT_EQ(back.undelivered[0].task_id, 1u);
  EXPECT_TRUE(back.abandoned.empty());
  EXPECT_FALSE(s.AwaitsAdoption("j1", 1, 0));
  EXPECT_EQ(s.FindJob("j1")->task_state(1), TaskState::kReady);
  // w2's own key never came: its attempt waits out the deadline.
  EXPECT_TRUE(s.AwaitsAdoption("j1", 2, 0));
}

// A coordinator killed with assignments still in its send queue: they were recorded as sent,
// never arrived. Their worker (the same process: it reports what it did get) registers again
// without them; they run again under a new number and are not charged against `retries`, so
// a crash never eats a task's retry budget. A worker that comes back holding nothing may be a
// new process, the task perhaps what stopped the old one: that attempt is charged.
TEST(AdoptionTest, AnAttemptTheCrashKeptFromItsWorkerIsNotCharged) {
  auto restored = MakeJob("j1", "name: n\nnodes:\n  - {id: a, op: noop, params: {tasks: 4}, retries: 1}\n");
  for (uint64_t t = 0; t < 4; ++t) restored->RestoreAttempts(t, 1);
  Scheduler s(5000);
  s.AddJob(std::move(restored));
  ASSERT_TRUE(s.AwaitAdoption("j1",
                              {{0, 0, "w1", "k1"}, {1, 0, "w1", "k1"}, {2, 0, "w2", "k2"},
                               {3, 0, "w2", "k2"}},
                              10'000)
                  .empty());
  const Registration same = s.RegisterWorker(Worker("w1", 4, {Held(0, 0, true)}), 0, "k1");
  ASSERT_EQ(same.undelivered.size(), 1u);
  EXPECT_EQ(same.undelivered[0].task_id, 1u);
  const Registration fresh = s.RegisterWorker(Worker("w2", 4), 0, "k2");
  ASSERT_EQ(fresh.abandoned.size(), 2u);
  EXPECT_TRUE(fresh.undelivered.empty());

  const JobState& job = *s.FindJob("j1");
  EXPECT_EQ(job.attempt_base(1), 1u) << "never arrived: not charged";
  EXPECT_EQ(job.attempt_base(2), 0u) << "its worker holds nothing: maybe it ran, charged";
  // Task 1's next attempt is a new number, and its one retry is still there: a failure of it
  // runs it once more.
  std::vector<wire::TaskSpec> sent = s.Assign("w1");
  auto of = [&](uint64_t task) {
    for (const wire::TaskSpec& t : sent) {
      if (t.task_id == task) return t;
    }
    ADD_FAILURE() << "task " << task << " not sent";
    return wire::TaskSpec{};
  };
  EXPECT_EQ(of(1).attempt, 1u);
  EXPECT_EQ(s.OnOutcome("w1", testing::OutcomeOf(of(1), false, "boom")), OutcomeKind::kRetrying);
  EXPECT_EQ(job.task_state(1), TaskState::kReady);
  // Task 2's abandoned attempt was charged: a failure of its next one is its last.
  EXPECT_EQ(s.OnOutcome("w1", testing::OutcomeOf(of(2), false, "boom")), OutcomeKind::kFailed);
  EXPECT_EQ(job.phase(), JobPhase::kFailed);
}

// The same worker on a new connection (its link was cut and ZeroMQ connected again; the
// coordinator never restarted): what it reports holding runs on and commits once; what it no
// longer holds (the cut swallowed it) goes back to the queue, never charged an attempt.
TEST(AdoptionTest, AWorkerRegisteringAgainOnANewConnectionKeepsWhatItHolds) {
  Scheduler s(5000);
  s.AddJob(MakeJob("j1", kFour));
  s.RegisterWorker(Worker("w1", 4), 0);
  ASSERT_EQ(s.Assign("w1").size(), 4u);
  const Registration r =
      s.RegisterWorker(Worker("w1", 4, {Held(0, 0, true), Held(1, 0, false)}), 100);
  EXPECT_TRUE(r.lost.empty()) << "a running task was given up on: " << r.lost.front().task_id;
  EXPECT_TRUE(r.release.empty());
  ASSERT_EQ(r.adopted.size(), 2u);
  const WorkerEntry& w = *s.registry().Find("w1");
  EXPECT_EQ(w.inflight.size(), 2u);
  EXPECT_EQ(w.started(), 1u);
  const JobState& job = *s.FindJob("j1");
  EXPECT_EQ(job.attempts(0), 1u);
  EXPECT_EQ(job.attempts(1), 1u);
  EXPECT_EQ(s.OnOutcome("w1", Ok(0, 0)), OutcomeKind::kCommitted);
  EXPECT_EQ(s.OnOutcome("w1", Ok(1, 0)), OutcomeKind::kCommitted);
  // Tasks 2 and 3 never reached it: dealt again.
  const auto again = s.Assign("w1");
  ASSERT_EQ(again.size(), 2u);
  EXPECT_EQ(job.done(), 2u);
}

// A worker that restarted reports nothing: all it held is lost, as before.
TEST(AdoptionTest, AWorkerThatRestartedLosesWhatItHeld) {
  Scheduler s(5000);
  s.AddJob(MakeJob("j1", kFour));
  s.RegisterWorker(Worker("w1", 1), 0);
  ASSERT_EQ(s.Assign("w1").size(), 1u);
  s.OnHeartbeat("w1", [] {
    wire::Heartbeat b;
    b.running = {{"j1", 0, 0}};
    return b;
  }(), 10);
  const Registration r = s.RegisterWorker(Worker("w1", 1), 100);
  ASSERT_EQ(r.lost.size(), 1u);
  EXPECT_TRUE(r.adopted.empty());
}

// A send the crash kept from being recorded: task 3 went out (attempt 0) just before the crash,
// so the store does not know it. Within the adoption window the worker that reports it keeps it,
// as long as nobody was dealt it since; after the window, or once dealt, it is released.
TEST(AdoptionTest, AnAttemptSentButNeverRecordedIsKeptWhileItsTaskStillWaits) {
  Scheduler s = Restored(10'000);
  const Registration r = s.RegisterWorker(Worker("w1", 4, {Held(3, 0, true)}), 100);
  ASSERT_EQ(r.adopted.size(), 1u);
  EXPECT_TRUE(r.release.empty());
  const JobState& job = *s.FindJob("j1");
  EXPECT_EQ(job.attempts(3), 1u);
  EXPECT_TRUE(s.Assign("w1").empty()) << "task 3 was dealt again";
  EXPECT_EQ(s.OnOutcome("w1", Ok(3, 0)), OutcomeKind::kCommitted);

  // Dealt to another worker first: the late reporter lets it go.
  Scheduler dealt = Restored(10'000);
  dealt.RegisterWorker(Worker("w2", 8), 0);
  ASSERT_EQ(dealt.Assign("w2").size(), 1u);  // task 3, attempt 0
  const Registration late = dealt.RegisterWorker(Worker("w1", 4, {Held(3, 0, true)}), 100);
  EXPECT_TRUE(late.adopted.empty());
  EXPECT_EQ(late.release.size(), 1u);

  // After the window: released.
  Scheduler after = Restored(10'000);
  const Registration too_late = after.RegisterWorker(Worker("w1", 4, {Held(3, 0, true)}), 10'001);
  EXPECT_TRUE(too_late.adopted.empty());
  EXPECT_EQ(too_late.release.size(), 1u);
}

// Right after a restart, dealing waits for the workers named by attempts in flight (their
// queues' front tasks may be sends the crash kept from being recorded), for at most 3 s.
TEST(AdoptionTest, DealingWaitsForTheWorkersWhoseAttemptsWereInFlight) {
  auto job = MakeJob("j1", kFour);
  job->RestoreAttempts(0, 1);
  Scheduler s(5000);
  s.AddJob(std::move(job));
  EXPECT_TRUE(s.AwaitAdoption("j1", {{0, 0, "w1", ""}}, 20'000, 1000).empty());
  s.RegisterWorker(Worker("w2", 4), 1100);
  EXPECT_TRUE(s.AwaitingHolders(1200)) << "w1 is not back yet";
  s.RegisterWorker(Worker("w1", 4, {Held(0, 0, true)}), 1300);
  EXPECT_FALSE(s.AwaitingHolders(1400));

  // One that never comes back holds dealing for 3 s only.
  auto other = MakeJob("j1", kFour);
  other->RestoreAttempts(0, 1);
  Scheduler t(5000);
  t.AddJob(std::move(other));
  t.AwaitAdoption("j1", {{0, 0, "gone", ""}}, 20'000, 1000);
  EXPECT_TRUE(t.AwaitingHolders(3999));
  EXPECT_FALSE(t.AwaitingHolders(4000));
}

}  // namespace
}  // namespace coupler::coordinator
