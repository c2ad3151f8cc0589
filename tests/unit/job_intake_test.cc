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
  ASSERT_TRUE(AdmitJob(Submit(text), "job-1", 0, "alice").ok());
  text.resize(job::kMaxSpecBytes + (1 << 20), ' ');
  Result<AdmittedJob> admitted = AdmitJob(Submit(text), "job-2", 0, "alice");
  ASSERT_FALSE(admitted.ok());
  EXPECT_EQ(admitted.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(admitted.status().message(),
              HasSubstr("/specs/job.json: error: spec is 17.0 MiB, over the 16 MiB limit"));
}

}  // namespace
}  // namespace coupler::coordinator
