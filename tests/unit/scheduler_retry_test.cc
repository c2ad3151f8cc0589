// The retry policy as the scheduler applies it, on a fake clock: InvalidData fails a task after
// its one attempt, other failures wait an exponential back-off per task (without holding up
// other tasks) and go to a worker that has not failed the task when one can take it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "coordinator/retry_policy.h"
#include "coordinator/scheduler.h"
#include "runtime/status.h"
#include "tests/unit/scheduler_test_util.h"

namespace coupler::coordinator {
namespace {

using ::testing::HasSubstr;
using testing::MakeJob;

wire::RegisterWorker Worker(const std::string& id, uint32_t slots) {
  wire::RegisterWorker w;
  w.worker_id = id;
  w.slots = slots;
  return w;
}

wire::TaskOutcome Outcome(const wire::TaskSpec& s, bool ok, StatusCode code = StatusCode::kOk,
                          const std::string& error = "") {
  wire::TaskOutcome o;
  o.job_id = s.job_id;
  o.task_id = s.task_id;
  o.attempt = s.attempt;
  o.ok = ok;
  o.error = error;
  o.error_code = static_cast<uint16_t>(code);
  return o;
}

wire::TaskOutcome Transient(const wire::TaskSpec& s) {
  return Outcome(s, false, StatusCode::kAborted, "exec: command exited with status 1: flaky");
}

void Started(Scheduler& s, const std::string& worker, const std::vector<wire::TaskSpec>& tasks) {
  std::vector<wire::TaskAttempt> running;
  for (const auto& t : tasks) running.push_back({t.job_id, t.task_id, t.attempt});
  s.MarkStarted(worker, running);
}

// A scheduler on a clock the test moves: no test here waits for real time.
struct FakeClock {
  int64_t now_ms = 0;
  void Attach(Scheduler& s) {
    s.SetRetryPolicy(kDefaultRetryPolicy, [this] { return now_ms; });
  }
};

TEST(RetryPolicyTest, DelaysDoublePerFailureUpToTheCap) {
  const RetryPolicy p = kDefaultRetryPolicy;
  EXPECT_EQ(RetryDelayMs(p, 1), 500);
  EXPECT_EQ(RetryDelayMs(p, 2), 1000);
  EXPECT_EQ(RetryDelayMs(p, 3), 2000);
  EXPECT_EQ(RetryDelayMs(p, 7), 30'000);  // 32 s, capped
  EXPECT_EQ(RetryDelayMs(p, 255), 30'000);
  EXPECT_EQ(RetryDelayMs(RetryPolicy{}, 3), 0);  // no policy: at once
}

TEST(RetryPolicyTest, OnlyInvalidDataIsNeverRetried) {
  EXPECT_FALSE(MayRetry(static_cast<uint16_t>(StatusCode::kInvalidData)));
  for (StatusCode c : {StatusCode::kOk, StatusCode::kInvalidArgument, StatusCode::kNotFound,
                       StatusCode::kUnavailable, StatusCode::kResourceExhausted,
                       StatusCode::kDeadlineExceeded, StatusCode::kAborted, StatusCode::kInternal}) {
    EXPECT_TRUE(MayRetry(static_cast<uint16_t>(c))) << StatusCodeName(c);
  }
}

TEST(SchedulerRetryTest, InvalidDataFailsTheTaskAfterOneAttemptWhateverRetriesSays) {
  Scheduler s(5000);
  FakeClock clock;
  clock.Attach(s);
  s.AddJob(MakeJob("j1", "name: n\nnodes:\n  - {id: x, op: noop, retries: 3, params: {tasks: 2}}\n"));
  s.RegisterWorker(Worker("w1", 1), 0);
  s.RegisterWorker(Worker("w2", 1), 0);
  auto t = s.Assign("w1");
  ASSERT_EQ(t.size(), 1u);
  const std::string why = "import_csv: in.csv: line 7, column 'x0': 'abc' is not a number";
  EXPECT_EQ(s.OnOutcome("w1", Outcome(t[0], false, StatusCode::kInvalidData, why)),
            OutcomeKind::kFailed);
  const JobState& j = *s.FindJob("j1");
  EXPECT_EQ(j.phase(), JobPhase::kFailed);
  EXPECT_EQ(j.attempts(t[0].task_id), 1u);
  EXPECT_EQ(j.total_attempts(), 1u);
  EXPECT_THAT(j.error(), HasSubstr("failed after 1 attempt (not retried"));
  EXPECT_THAT(j.error(), HasSubstr(why));
  clock.now_ms = 60'000;
  EXPECT_TRUE(s.Assign("w2").empty());
}

TEST(SchedulerRetryTest, ATransientFailureWaitsItsBackOffThenGoesToTheOtherWorker) {
  Scheduler s(5000);
  FakeClock clock;
  clock.Attach(s);
  s.AddJob(MakeJob("j1", "name: n\nnodes:\n  - {id: x, op: noop, retries: 3, params: {tasks: 1}}\n"));
  s.RegisterWorker(Worker("w1", 1), 0);
  s.RegisterWorker(Worker("w2", 1), 0);
  auto first = s.Assign("w1");
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(s.OnOutcome("w1", Transient(first[0])), OutcomeKind::kRetrying);
  const JobState& j = *s.FindJob("j1");
  EXPECT_EQ(j.backing_off(), 1u);
  // Nobody gets it before 0.5 s, not even the other worker.
  clock.now_ms = 499;
  EXPECT_TRUE(s.Assign("w1").empty());
  EXPECT_TRUE(s.Assign("w2").empty());
  clock.now_ms = 500;
  EXPECT_TRUE(s.Assign("w1").empty()) << "w1 failed it and w2 has room: w2's";
  auto second = s.Assign("w2");
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].attempt, 1u);
  // Fails on w2 too: the next wait is 1 s, and with both tried it runs where it can.
  clock.now_ms = 700;
  EXPECT_EQ(s.OnOutcome("w2", Transient(second[0])), OutcomeKind::kRetrying);
  clock.now_ms = 1699;
  EXPECT_TRUE(s.Assign("w1").empty());
  clock.now_ms = 1700;
  auto third = s.Assign("w1");
  ASSERT_EQ(third.size(), 1u);
  EXPECT_EQ(third[0].attempt, 2u);
  EXPECT_EQ(s.OnOutcome("w1", Outcome(third[0], true)), OutcomeKind::kCommitted);
  EXPECT_EQ(j.phase(), JobPhase::kSucceeded);
}

TEST(SchedulerRetryTest, TheOnlyWorkerThatCanRunItRunsItAgain) {
  Scheduler s(5000);
  FakeClock clock;
  clock.Attach(s);
  s.AddJob(MakeJob("j1", "name: n\nnodes:\n  - {id: x, op: noop, retries: 1, params: {tasks: 1}}\n"));
  s.RegisterWorker(Worker("w1", 1), 0);
  auto first = s.Assign("w1");
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(s.OnOutcome("w1", Transient(first[0])), OutcomeKind::kRetrying);
  clock.now_ms = 500;
  auto again = s.Assign("w1");
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].attempt, 1u);
  // Its last allowed attempt fails too: the job fails with the error, after 2 attempts.
  EXPECT_EQ(s.OnOutcome("w1", Transient(again[0])), OutcomeKind::kFailed);
  EXPECT_THAT(s.FindJob("j1")->error(), HasSubstr("failed after 2 attempts: exec: command exited"));
}

TEST(SchedulerRetryTest, AnotherWorkerWithNoFreeSlotLeavesTheRetryWhereThereIsOne) {
  Scheduler s(5000);
  FakeClock clock;
  clock.Attach(s);
  s.AddJob(MakeJob("j1", "name: n\nnodes:\n  - {id: x, op: noop, retries: 1, params: {tasks: 2}}\n"));
  s.RegisterWorker(Worker("w1", 1), 0);
  s.RegisterWorker(Worker("w2", 1), 0);
  auto a = s.Assign("w1");
  auto b = s.Assign("w2");
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(s.OnOutcome("w1", Transient(a[0])), OutcomeKind::kRetrying);
  clock.now_ms = 500;
  // w2 is busy with the other task: waiting for it could take hours, so w1 runs it again.
  auto again = s.Assign("w1");
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].task_id, a[0].task_id);
}

TEST(SchedulerRetryTest, ABackingOffTaskHoldsUpNoOtherTaskAndRetriesLeaveInDueOrder) {
  Scheduler s(5000);
  FakeClock clock;
  clock.Attach(s);
  s.AddJob(MakeJob("j1", "name: n\nnodes:\n  - {id: x, op: noop, retries: 5, params: {tasks: 4}}\n"));
  s.RegisterWorker(Worker("w1", 2), 0);
  auto first = s.Assign("w1");
  ASSERT_EQ(first.size(), 2u);
  // Task 0 fails at t=0 (due at 500); its slot goes to the next task at once.
  EXPECT_EQ(s.OnOutcome("w1", Transient(first[0])), OutcomeKind::kRetrying);
  auto next = s.Assign("w1");
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].task_id, 2u);
  // Task 1 fails at t=100 (due at 600), task 2 at t=200 (due at 700).
  clock.now_ms = 100;
  EXPECT_EQ(s.OnOutcome("w1", Transient(first[1])), OutcomeKind::kRetrying);
  clock.now_ms = 200;
  EXPECT_EQ(s.OnOutcome("w1", Transient(next[0])), OutcomeKind::kRetrying);
  auto last = s.Assign("w1");
  ASSERT_EQ(last.size(), 1u);  // task 3; nothing else is due, so a credit stays unused
  EXPECT_EQ(last[0].task_id, 3u);
  EXPECT_EQ(s.OnOutcome("w1", Outcome(last[0], true)), OutcomeKind::kCommitted);
  EXPECT_EQ(s.FindJob("j1")->backing_off(), 3u);
  clock.now_ms = 650;  // tasks 0 and 1 are due, task 2 is not
  auto due = s.Assign("w1");
  ASSERT_EQ(due.size(), 2u);
  EXPECT_EQ(due[0].task_id, 0u);
  EXPECT_EQ(due[1].task_id, 1u);
  EXPECT_EQ(s.FindJob("j1")->backing_off(), 1u);
}

TEST(SchedulerRetryTest, ALostWorkersTaskIsRetriedOnTheOtherEvenWhenTheLostOneComesBack) {
  Scheduler s(5000);
  FakeClock clock;
  clock.Attach(s);
  s.AddJob(MakeJob("j1", "name: n\nnodes:\n  - {id: x, op: noop, retries: 2, params: {tasks: 1}}\n"));
  s.RegisterWorker(Worker("w1", 1), 0);
  s.RegisterWorker(Worker("w2", 1), 0);
  auto first = s.Assign("w1");
  ASSERT_EQ(first.size(), 1u);
  Started(s, "w1", first);
  auto lost = s.RemoveWorker("w1", 0);
  ASSERT_EQ(lost.size(), 1u);
  const JobState& j = *s.FindJob("j1");
  EXPECT_THAT(j.tried_on(first[0].task_id), ::testing::ElementsAre("w1"));
  clock.now_ms = 500;
  s.RegisterWorker(Worker("w1", 1), 500);  // restarted, and first to ask
  EXPECT_TRUE(s.Assign("w1").empty());
  auto retry = s.Assign("w2");
  ASSERT_EQ(retry.size(), 1u);
  EXPECT_EQ(retry[0].attempt, 1u);
  EXPECT_EQ(s.OnOutcome("w2", Outcome(retry[0], true)), OutcomeKind::kCommitted);
}

}  // namespace
}  // namespace coupler::coordinator
