#include "coordinator/job_intake.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "runtime/job/spec_limits.h"

namespace coupler::coordinator {
namespace {

using ::testing::HasSubstr;

wire::SubmitJob Submit(std::string text) {
  wire::SubmitJob s;
  s.spec_text = std::move(text);
  s.spec_path = "/specs/job.json";
  s.cwd = "/specs";
  return s;
}

// What the coordinator admits is held for the job's life and persisted: an oversize spec is
// refused with its size, however it reached the coordinator.
TEST(JobIntakeTest, RefusesASubmittedSpecOverTheSizeLimit) {
  std::string text = R"({"name": "j", "nodes": [{"id": "a", "op": "noop"}]})";
  ASSERT_TRUE(AdmitJob(Submit(text), "job-1", 0, "alice", IntakeContext{}).ok());
  text.resize(job::kMaxSpecBytes + (1 << 20), ' ');
  Result<AdmittedJob> admitted = AdmitJob(Submit(text), "job-2", 0, "alice", IntakeContext{});
  ASSERT_FALSE(admitted.ok());
  EXPECT_EQ(admitted.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(admitted.status().message(),
              HasSubstr("/specs/job.json: error: spec is 17.0 MiB, over the 16 MiB limit"));
}

// A restart counts every attempt that was sent, the ones in flight at the crash included, and
// numbers the next attempt after them: none is forgotten, none is reused.
TEST(JobIntakeTest, ARestoredTaskGoesOnAfterEveryAttemptSentFailedOrCommitted) {
  const std::string text = R"({"name": "j", "nodes": [{"id": "a", "op": "noop", "params": {"tasks": 4}}]})";
  Result<AdmittedJob> admitted = AdmitJob(Submit(text), "j-000001", 0, "alice", IntakeContext{});
  ASSERT_TRUE(admitted.ok()) << admitted.status().ToString();
  store::JobRecord rec = admitted->record;
  rec.state = "running";
  store::CommittedTask done;
  done.task_id = 0;
  done.attempt = 0;
  store::AttemptRecord lost{rec.id, 2, 0, "w1", "lost", "worker w1 died", 1};
  // Task 0 committed; 1 was in flight (sent twice: attempts 0 and 1); 2 was lost once and sent
  // again; 3 was never sent.
  const std::vector<store::SentAttempt> sent = {
      {0, 0, "", ""}, {1, 0, "", ""}, {2, 0, "", ""}, {1, 1, "", ""}, {2, 1, "", ""}};
  Result<std::unique_ptr<JobState>> job = RestoreJob(rec, {{done}, {lost}, sent});
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ((*job)->attempts(0), 1u);
  EXPECT_EQ((*job)->attempts(1), 2u);
  EXPECT_EQ((*job)->attempts(2), 2u);
  EXPECT_EQ((*job)->attempts(3), 0u);
  EXPECT_EQ((*job)->total_attempts(), 5u);
  EXPECT_EQ((*job)->done(), 1u);
  EXPECT_EQ((*job)->facts().submitted_by, "alice");
}

// An attempt given back unstarted (a Reclaim, or a drain's hand-back) is replayed as queued
// under its own number: not in flight anywhere, not charged. One sent again after its return is
// in flight again, at its new worker.
TEST(JobIntakeTest, AnAttemptGivenBackUnstartedIsQueuedAgainUnchargedAfterARestart) {
  const std::string text = R"({"name": "j", "nodes": [{"id": "a", "op": "noop", "params": {"tasks": 3}}]})";
  Result<AdmittedJob> admitted = AdmitJob(Submit(text), "j-000001", 0, "alice", IntakeContext{});
  ASSERT_TRUE(admitted.ok()) << admitted.status().ToString();
  store::JobRecord rec = admitted->record;
  rec.state = "running";
  // Task 0: sent to w1, given back. Task 1: sent to w1, given back, sent to w2. Task 2: sent
  // twice (attempt 0 lost with its worker, attempt 1 given back).
  store::AttemptRecord lost{rec.id, 2, 0, "w0", "lost", "worker w0 died", 1};
  const std::vector<store::SentAttempt> sent = {
      {0, 0, "w1", "k"},       {1, 0, "w1", "k"},       {2, 0, "w0", "k"},
      {0, 0, "w1", "", 0, true}, {1, 0, "w1", "", 0, true}, {1, 0, "w2", "k"},
      {2, 1, "w1", "k"},       {2, 1, "w1", "", 0, true}};
  Result<std::unique_ptr<JobState>> job = RestoreJob(rec, {{}, {lost}, sent});
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ((*job)->attempts(0), 0u);
  EXPECT_EQ((*job)->attempts(1), 1u);
  EXPECT_EQ((*job)->attempts(2), 1u);
  EXPECT_EQ((*job)->total_attempts(), 2u);
  const std::vector<store::SentAttempt> want = {{1, 0, "w2", "k"}};
  EXPECT_EQ(InFlightAttempts({{}, {lost}, sent}), want);
}

// Attempts withdrawn by an operator (the worker's key revoked, a ban) are replayed as uncharged:
// the task's attempt base moves up by each, so `retries` is whole after a restart as before it.
TEST(JobIntakeTest, WithdrawnAttemptsAreReplayedUncharged) {
  const std::string text = R"({"name": "j", "nodes": [{"id": "a", "op": "noop", "params": {"tasks": 2}}]})";
  Result<AdmittedJob> admitted = AdmitJob(Submit(text), "j-000001", 0, "alice", IntakeContext{});
  ASSERT_TRUE(admitted.ok()) << admitted.status().ToString();
  store::JobRecord rec = admitted->record;
  rec.state = "running";
  const std::vector<store::AttemptRecord> ended = {
      {rec.id, 0, 0, "w1", std::string(store::kWithdrawnOutcome), "worker w1's key 'k' was revoked", 1},
      {rec.id, 0, 1, "w2", std::string(store::kWithdrawnOutcome), "worker w2 was banned", 2},
      {rec.id, 1, 0, "w1", "lost", "worker w1 was lost", 3}};
  const std::vector<store::SentAttempt> sent = {{0, 0, "w1", "k"}, {1, 0, "w1", "k"}, {0, 1, "w2", "k"}};
  Result<std::unique_ptr<JobState>> job = RestoreJob(rec, {{}, ended, sent});
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ((*job)->attempts(0), 2u);
  EXPECT_EQ((*job)->attempt_base(0), 2u) << "both withdrawn attempts are free";
  EXPECT_EQ((*job)->attempts(1), 1u);
  EXPECT_EQ((*job)->attempt_base(1), 0u) << "a lost worker's attempt is charged";
}

// A map task whose output a reduce found lost had its commit revoked: restored, it is not done,
// runs again under its next number, and that rebuild is not charged; its reduce waits for it
// (not released: the node's map tasks are not all done).
TEST(JobIntakeTest, AMapTaskWhoseOutputWasLostIsRestoredToRunAgainUncharged) {
  const std::string text = R"(name: j
nodes:
  - {id: src, op: noop, params: {tasks: 2}}
  - {id: g, op: group_by, inputs: [src], params: {keys: [k], partitions: 1, aggregates: {n: size()}}}
)";
  Result<AdmittedJob> admitted = AdmitJob(Submit(text), "j-000001", 0, "alice", IntakeContext{});
  ASSERT_TRUE(admitted.ok()) << admitted.status().ToString();
  store::JobRecord rec = admitted->record;
  rec.state = "running";
  // Tasks: src 0, 1; g's maps 2, 3; g's reduce 4.
  std::vector<store::CommittedTask> commits(3);
  for (uint64_t t : {0, 1, 3}) commits[t == 3 ? 2 : t].task_id = t;
  const std::vector<store::AttemptRecord> ended = {
      {rec.id, 4, 0, "w1", "failed", "group_by: no such file", 5},
      {rec.id, 2, 0, "", std::string(store::kOutputLostOutcome), "its output is missing", 5}};
  const std::vector<store::SentAttempt> sent = {{0, 0, "w1", "k"}, {1, 0, "w1", "k"}, {2, 0, "w1", "k"},
                                                {3, 0, "w1", "k"}, {4, 0, "w1", "k"}};
  Result<std::unique_ptr<JobState>> job = RestoreJob(rec, {commits, ended, sent});
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ((*job)->task_state(2), TaskState::kReady);
  EXPECT_EQ((*job)->attempts(2), 1u);
  EXPECT_EQ((*job)->attempt_base(2), 1u) << "the rebuild is free";
  EXPECT_EQ((*job)->task_state(4), TaskState::kBlocked) << "the reduce waits for map task 2";
  EXPECT_EQ((*job)->attempts(4), 1u);
  EXPECT_TRUE(InFlightAttempts({commits, ended, sent}).empty());
}

// A restored job's tasks carry the same typed params as the admitted job's, defaults filled in,
// and the same coordinator decisions (kind, shard count).
// What a restart reports as abandoned: sent, and neither committed nor ended before it.
TEST(JobIntakeTest, InFlightAttemptsAreTheSentOnesThatNeitherCommittedNorEnded) {
  store::CommittedTask done;
  done.task_id = 0;
  store::AttemptRecord lost{"j-1", 2, 0, "w1", "lost", "worker w1 died", 1};
  const std::vector<store::SentAttempt> sent = {
      {0, 0, "w1", "k"}, {2, 1, "w2", "k"}, {1, 0, "w1", "k"}, {2, 0, "w1", "k"}, {1, 0, "w1", "k"}};
  const std::vector<store::SentAttempt> want = {{1, 0, "w1", "k"}, {2, 1, "w2", "k"}};
  EXPECT_EQ(InFlightAttempts({{done}, {lost}, sent}), want);
  EXPECT_TRUE(InFlightAttempts({}).empty());
}

TEST(JobIntakeTest, ARestoredJobsTasksGetTheSameTypedParams) {
  const std::string text =
      R"({"name": "j", "nodes": [{"id": "a", "op": "noop", "params": {"tasks": 3}}]})";
  Result<AdmittedJob> admitted = AdmitJob(Submit(text), "j-000001", 0, "alice", IntakeContext{});
  ASSERT_TRUE(admitted.ok()) << admitted.status().ToString();
  Result<std::unique_ptr<JobState>> restored = RestoreJob(admitted->record);
  ASSERT_TRUE(restored.ok()) << restored.status().ToString();
  for (uint64_t t = 0; t < 3; ++t) {
    const wire::TaskSpec before = admitted->job->MakeSpec(t);
    const wire::TaskSpec after = (*restored)->MakeSpec(t);
    EXPECT_EQ(after, before);
    EXPECT_EQ(after.params.Get<int64_t>("tasks").value(), 3);
    EXPECT_EQ(after.params.Get<int64_t>("sleep_ms").value(), 0);  // the schema's default
    EXPECT_EQ(after.kind, wire::TaskKind::kMap);
    EXPECT_EQ(after.shards, 3u);
  }
}

}  // namespace
}  // namespace coupler::coordinator

namespace coupler::coordinator {
namespace {

constexpr const char* kTwoNodes =
    R"({"name": "j", "nodes": [{"id": "a", "op": "noop", "params": {"tasks": 3}},
                               {"id": "b", "op": "noop", "params": {"tasks": 2}}]})";

// A restored job is its admitted plan replayed: here the record numbers b's tasks first (as an
// older or newer planner might), unlike today's planner; the commits recorded under those
// numbers are b's after the restart, and the spec is not even read again (it is garbage here).
TEST(JobIntakeTest, ARestoredJobFollowsItsRecordedPlanNotTodaysPlanner) {
  Result<AdmittedJob> admitted = AdmitJob(Submit(kTwoNodes), "j-000001", 0, "alice", IntakeContext{});
  ASSERT_TRUE(admitted.ok()) << admitted.status().ToString();
  EXPECT_EQ(admitted->job->table().Describe(0).plan_node, 0u);
  EXPECT_EQ(admitted->job->plan().nodes[0].id, "a") << "today's planner numbers a first";

  Result<AdmittedPlan> plan = DecodeAdmittedPlan(admitted->record.plan);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  std::swap(plan->plan.nodes[0], plan->plan.nodes[1]);  // b's tasks are 0 and 1 now
  store::JobRecord rec = admitted->record;
  rec.plan = EncodeAdmittedPlan(*plan);
  rec.spec_text = "{not a spec";
  rec.state = "running";
  std::vector<store::CommittedTask> commits(2);
  for (uint64_t t = 0; t < 2; ++t) commits[t].task_id = t;
  Result<std::unique_ptr<JobState>> job = RestoreJob(rec, {commits});
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  const JobState& j = **job;
  ASSERT_EQ(j.plan().nodes[0].id, "b");
  EXPECT_EQ(j.node_done(0), 2u) << "the commits of tasks 0 and 1 are b's, as recorded";
  EXPECT_EQ(j.node_done(1), 0u) << "none of a's tasks ran";
  EXPECT_EQ(j.MakeSpec(0).node_id, "b");
  EXPECT_EQ(j.MakeSpec(2).node_id, "a");
  EXPECT_EQ(j.workdir_token(), admitted->job->workdir_token());
  EXPECT_EQ(j.graph().workdir, admitted->job->graph().workdir);
  EXPECT_EQ(RunDirOf(rec), admitted->job->graph().workdir);
}

// A damaged plan is a clear error naming the job, never a job restored from half a record.
TEST(JobIntakeTest, ADamagedPlanFailsTheRestoreByName) {
  Result<AdmittedJob> admitted = AdmitJob(Submit(kTwoNodes), "j-000002", 0, "alice", IntakeContext{});
  ASSERT_TRUE(admitted.ok()) << admitted.status().ToString();
  store::JobRecord rec = admitted->record;
  rec.plan.resize(rec.plan.size() / 2);
  Result<std::unique_ptr<JobState>> job = RestoreJob(rec);
  ASSERT_FALSE(job.ok());
  EXPECT_THAT(job.status().message(), HasSubstr("job j-000002's admitted plan"));
  EXPECT_THAT(job.status().message(), HasSubstr("damaged"));
}

}  // namespace
}  // namespace coupler::coordinator
