// Queued work moves to idle workers (Scheduler::PlanReclaims, OnReclaimed): attempts waiting
// unstarted behind a worker's busy slots are asked back when another worker has open slots and
// nothing is ready; those the worker gives back go out again under the same attempt numbers,
// uncharged; a started one stays where it runs.
#include <gtest/gtest.h>

#include "coordinator/scheduler.h"
#include "tests/unit/scheduler_test_util.h"

namespace coupler::coordinator {
namespace {

using testing::MakeJob;

constexpr const char* kSix = "name: n\nnodes:\n  - {id: a, op: noop, params: {tasks: 6}}\n";

wire::RegisterWorker Worker(const std::string& id, uint32_t slots, uint32_t prefetch) {
  wire::RegisterWorker w;
  w.worker_id = id;
  w.slots = slots;
  w.prefetch = prefetch;
  return w;
}

void Started(Scheduler& s, const std::string& worker, std::vector<wire::TaskAttempt> running) {
  wire::Heartbeat beat;
  beat.sender_id = worker;
  beat.running = std::move(running);
  s.OnHeartbeat(worker, beat, 0);
}

TEST(ReclaimTest, WaitingAttemptsGoBackToAnIdleWorkerUnderTheirOwnNumbers) {
  Scheduler s(5000);
  s.RegisterWorker(Worker("w1", 1, 8), 0);
  s.AddJob(MakeJob("j1", kSix));
  const std::vector<wire::TaskSpec> sent = s.Assign("w1");
  ASSERT_EQ(sent.size(), 6u);  // 1 slot + prefetch: it holds them all
  EXPECT_TRUE(s.PlanReclaims().empty()) << "nobody is idle";

  s.RegisterWorker(Worker("w2", 2, 0), 0);
  EXPECT_TRUE(s.PlanReclaims().empty()) << "w1 has not started one: its own slot takes them";
  Started(s, "w1", {{"j1", sent[0].task_id, 0}});
  const auto asks = s.PlanReclaims();
  ASSERT_EQ(asks.size(), 1u);
  EXPECT_EQ(asks[0].first, "w1");
  ASSERT_EQ(asks[0].second.size(), 2u) << "as many as w2's open slots";
  EXPECT_EQ(asks[0].second[0].task_id, sent[5].task_id) << "the latest sent first";
  EXPECT_TRUE(s.PlanReclaims().empty()) << "each attempt is asked for once";

  // w1 gives one back; the other started meanwhile.
  EXPECT_EQ(s.OnReclaimed("w1", {asks[0].second[0]}).size(), 1u);
  const JobState& job = *s.FindJob("j1");
  EXPECT_EQ(job.task_state(sent[5].task_id), TaskState::kReady);
  EXPECT_EQ(job.attempts(sent[5].task_id), 0u) << "uncharged";
  const std::vector<wire::TaskSpec> moved = s.Assign("w2");
  ASSERT_EQ(moved.size(), 1u);
  EXPECT_EQ(moved[0].task_id, sent[5].task_id);
  EXPECT_EQ(moved[0].attempt, 0u) << "the same attempt number: it never ran";
  // A late or repeated answer for it changes nothing: w1 no longer holds it.
  EXPECT_EQ(s.OnReclaimed("w1", {asks[0].second[0]}).size(), 0u);
  EXPECT_EQ(job.task_state(sent[5].task_id), TaskState::kRunning);
}

TEST(ReclaimTest, ReadyWorkGoesFirstAndAStartedAttemptIsNeverTaken) {
  Scheduler s(5000);
  s.RegisterWorker(Worker("w1", 1, 2), 0);
  s.AddJob(MakeJob("j1", kSix));
  const std::vector<wire::TaskSpec> sent = s.Assign("w1");
  ASSERT_EQ(sent.size(), 3u);
  Started(s, "w1", {{"j1", sent[0].task_id, 0}});
  for (const char* id : {"w2", "w3", "w4"}) {
    s.RegisterWorker(Worker(id, 1, 0), 0);
    EXPECT_TRUE(s.PlanReclaims().empty()) << "tasks are still ready: they go first";
    ASSERT_EQ(s.Assign(id).size(), 1u);
  }
  s.RegisterWorker(Worker("w5", 1, 0), 0);
  const auto asks = s.PlanReclaims();
  ASSERT_EQ(asks.size(), 1u);
  ASSERT_EQ(asks[0].second.size(), 1u) << "one idle slot";
  EXPECT_NE(asks[0].second[0].task_id, sent[0].task_id) << "the started one stays";
  EXPECT_EQ(s.OnReclaimed("w1", {{"j1", sent[0].task_id, 0}}).size(), 0u) << "it runs on w1";
  EXPECT_EQ(s.FindJob("j1")->task_state(sent[0].task_id), TaskState::kRunning);
}

}  // namespace
}  // namespace coupler::coordinator
