// A retry and the retention sweeper never hold one job's run directory at once, and a removed
// directory refuses later retries with the reason.
#include "coordinator/run_dir_claims.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace coupler::coordinator {
namespace {

using ::testing::HasSubstr;

TEST(RunDirClaimsTest, ARetryHoldsTheSweeperOffAndARemovalRefusesTheRetry) {
  RunDirClaims claims;
  std::string why;
  ASSERT_TRUE(claims.BeginRetry("j-1", &why));
  EXPECT_FALSE(claims.BeginRemoval("j-1")) << "removed under a retry";
  claims.EndRetry("j-1");
  ASSERT_TRUE(claims.BeginRemoval("j-1"));
  EXPECT_FALSE(claims.BeginRetry("j-1", &why));
  EXPECT_THAT(why, HasSubstr("being removed"));
  claims.EndRemoval("j-1", true);
  EXPECT_FALSE(claims.BeginRetry("j-1", &why));
  EXPECT_THAT(why, HasSubstr("was removed"));

  // A removal that kept the directory leaves the job as it was.
  ASSERT_TRUE(claims.BeginRemoval("j-2"));
  claims.EndRemoval("j-2", false);
  EXPECT_TRUE(claims.BeginRetry("j-2", &why));
}

}  // namespace
}  // namespace coupler::coordinator
