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
  store::TaskCommit done;
  done.job_id = rec.id;
  done.task_id = 0;
  done.attempt = 0;
  store::AttemptRecord lost{rec.id, 2, 0, "w1", "lost", "worker w1 died", 1};
  // Task 0 committed; 1 was in flight (sent twice: attempts 0 and 1); 2 was lost once and sent
  // again; 3 was never sent.
  const std::vector<std::pair<uint64_t, uint32_t>> sent = {{0, 0}, {1, 0}, {2, 0}, {1, 1}, {2, 1}};
  Result<std::unique_ptr<JobState>> job = RestoreJob(rec, {done}, {lost}, sent);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ((*job)->attempts(0), 1u);
  EXPECT_EQ((*job)->attempts(1), 2u);
  EXPECT_EQ((*job)->attempts(2), 2u);
  EXPECT_EQ((*job)->attempts(3), 0u);
  EXPECT_EQ((*job)->total_attempts(), 5u);
  EXPECT_EQ((*job)->done(), 1u);
  EXPECT_EQ((*job)->submitted_by(), "alice");
}

// A restored job's tasks carry the same typed params as the admitted job's, defaults filled in,
// and the same coordinator decisions (kind, shard count).
// What a restart reports as abandoned: sent, and neither committed nor ended before it.
TEST(JobIntakeTest, AbandonedAttemptsAreTheSentOnesThatNeitherCommittedNorEnded) {
  store::TaskCommit done;
  done.task_id = 0;
  store::AttemptRecord lost{"j-1", 2, 0, "w1", "lost", "worker w1 died", 1};
  const std::vector<std::pair<uint64_t, uint32_t>> sent = {{0, 0}, {2, 1}, {1, 0}, {2, 0}, {1, 0}};
  const std::vector<std::pair<uint64_t, uint32_t>> want = {{1, 0}, {2, 1}};
  EXPECT_EQ(AbandonedAttempts({done}, {lost}, sent), want);
  EXPECT_TRUE(AbandonedAttempts({}, {}, {}).empty());
}

TEST(JobIntakeTest, ARestoredJobsTasksGetTheSameTypedParams) {
  const std::string text =
      R"({"name": "j", "nodes": [{"id": "a", "op": "noop", "params": {"tasks": 3}}]})";
  Result<AdmittedJob> admitted = AdmitJob(Submit(text), "j-000001", 0, "alice", IntakeContext{});
  ASSERT_TRUE(admitted.ok()) << admitted.status().ToString();
  Result<std::unique_ptr<JobState>> restored = RestoreJob(admitted->record, {}, {});
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
