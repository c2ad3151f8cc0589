#include "runtime/job/job_loader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "runtime/job/spec_limits.h"
#include "tests/unit/spec_test_util.h"

namespace coupler::job {
namespace {

using testing::Errors;
using testing::Load;

constexpr const char* kSmallSpec = "{\"name\": \"j\", \"nodes\": [{\"id\": \"a\", \"op\": \"noop\"}]}";

// Spec text is what the coordinator gets from `submit`: the cap holds there, not only on files.
TEST(JobLoaderTest, RefusesSpecTextOverTheSizeLimit) {
  std::string text = kSmallSpec;
  text.resize(kMaxSpecBytes + (1 << 20), ' ');
  LoadedJob j = Load(text);
  EXPECT_FALSE(j.ok());
  EXPECT_EQ(Errors(j), "job.yaml: error: spec is 17.0 MiB, over the 16 MiB limit\n");
}

TEST(JobLoaderTest, ReadsSpecTextOfExactlyTheSizeLimit) {
  std::string text = kSmallSpec;
  text.resize(kMaxSpecBytes, ' ');
  LoadedJob j = Load(text);
  EXPECT_TRUE(j.ok()) << Errors(j);
}

TEST(JobLoaderTest, SizeMessageNamesTheSizeInMebibytes) {
  EXPECT_TRUE(CheckSpecSize(kMaxSpecBytes).ok());
  EXPECT_EQ(CheckSpecSize(70ull << 20).message(), "spec is 70.0 MiB, over the 16 MiB limit");
  EXPECT_EQ(CheckSpecSize(kMaxSpecBytes + 1).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace coupler::job
