// The shared-filesystem check: a marker written at admission is found by a worker that sees the
// same workdir, and one that does not is told why in the words the user needs.
#include "runtime/job/workdir_marker.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "runtime/io/temp_dir.h"
#include "runtime/wire/worker_messages.h"
#include "worker/workdir_check.h"

namespace coupler {
namespace {

namespace fs = std::filesystem;

TEST(WorkdirMarkerTest, AWorkerThatSeesTheWorkdirFindsTheMarker) {
  Result<io::TempDir> made = io::TempDir::Create();
  ASSERT_TRUE(made.ok());
  io::TempDir& dir = *made;
  const std::string workdir = (fs::path(dir.path()) / "work" / "job").string();
  ASSERT_TRUE(job::WriteWorkdirMarker(workdir, "j-000001", "tok-1").ok());
  EXPECT_TRUE(fs::exists(job::WorkdirMarkerPath(workdir, "j-000001")));
  EXPECT_TRUE(job::CheckWorkdirMarker(workdir, "j-000001", "tok-1", "10.0.0.7").ok());
}

TEST(WorkdirMarkerTest, AMissingOrForeignMarkerSaysTheWorkdirIsNotShared) {
  Result<io::TempDir> made = io::TempDir::Create();
  ASSERT_TRUE(made.ok());
  io::TempDir& dir = *made;
  const std::string workdir = dir.path();
  Status missing = job::CheckWorkdirMarker(workdir, "j-000002", "tok", "10.0.0.7");
  EXPECT_EQ(missing.code(), StatusCode::kUnavailable);
  EXPECT_EQ(std::string(missing.message()).rfind("workdir " + workdir + " not visible on host 10.0.0.7: "
                                                 "coupler needs a shared filesystem", 0), 0u)
      << missing.message();
  // Another filesystem at the same path, holding a marker of its own (a stale copy).
  ASSERT_TRUE(job::WriteWorkdirMarker(workdir, "j-000002", "other").ok());
  EXPECT_EQ(job::CheckWorkdirMarker(workdir, "j-000002", "tok", "h").code(), StatusCode::kUnavailable);
}

TEST(WorkdirCheckTest, ChecksOncePerJobAndSkipsTasksWithoutAMarker) {
  Result<io::TempDir> made = io::TempDir::Create();
  ASSERT_TRUE(made.ok());
  io::TempDir& dir = *made;
  const std::string workdir = dir.path();
  worker::WorkdirCheck check("10.0.0.9");
  wire::TaskSpec spec;
  spec.job_id = "j-3";
  EXPECT_TRUE(check.Check(spec).ok());  // no marker asked for
  spec.workdir = workdir;
  spec.workdir_token = "t3";
  EXPECT_FALSE(check.Check(spec).ok());
  // The answer is remembered: the first refusal stands for the job.
  ASSERT_TRUE(job::WriteWorkdirMarker(workdir, "j-3", "t3").ok());
  EXPECT_FALSE(check.Check(spec).ok());
  spec.job_id = "j-4";
  ASSERT_TRUE(job::WriteWorkdirMarker(workdir, "j-4", "t3").ok());
  EXPECT_TRUE(check.Check(spec).ok());
}

}  // namespace
}  // namespace coupler
