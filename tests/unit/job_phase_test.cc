#include "runtime/job/job_phase.h"

#include <gtest/gtest.h>

namespace coupler::job {
namespace {

TEST(JobPhaseTest, EveryPhaseParsesBackFromItsName) {
  for (const JobPhase phase : {JobPhase::kQueued, JobPhase::kRunning, JobPhase::kSucceeded,
                               JobPhase::kFailed, JobPhase::kCancelled}) {
    EXPECT_EQ(ParseJobPhase(JobPhaseName(phase)), phase) << JobPhaseName(phase);
  }
}

TEST(JobPhaseTest, TheNamesOnTheWire) {
  EXPECT_EQ(JobPhaseName(JobPhase::kQueued), "queued");
  EXPECT_EQ(JobPhaseName(JobPhase::kRunning), "running");
  EXPECT_EQ(JobPhaseName(JobPhase::kSucceeded), "succeeded");
  EXPECT_EQ(JobPhaseName(JobPhase::kFailed), "failed");
  EXPECT_EQ(JobPhaseName(JobPhase::kCancelled), "cancelled");
}

TEST(JobPhaseTest, UnknownNamesDoNotParse) {
  EXPECT_EQ(ParseJobPhase(""), std::nullopt);
  EXPECT_EQ(ParseJobPhase("done"), std::nullopt);
  EXPECT_EQ(ParseJobPhase("Running"), std::nullopt);
}

TEST(JobPhaseTest, OnlyTheEndsAreFinished) {
  EXPECT_FALSE(IsFinished(JobPhase::kQueued));
  EXPECT_FALSE(IsFinished(JobPhase::kRunning));
  EXPECT_TRUE(IsFinished(JobPhase::kSucceeded));
  EXPECT_TRUE(IsFinished(JobPhase::kFailed));
  EXPECT_TRUE(IsFinished(JobPhase::kCancelled));
}

}  // namespace
}  // namespace coupler::job
