// A worker's half of the fencing token: once registered with epoch E it drops whatever a
// coordinator of an older epoch sends, and only a Registered answer moves it.
#include <gtest/gtest.h>

#include "worker/epoch_fence.h"

namespace coupler::worker {
namespace {

using wire::MessageType;

TEST(EpochFenceTest, BeforeAnyRegistrationEverythingIsTaken) {
  EpochFence fence;
  EXPECT_TRUE(fence.Admit(MessageType::kHeartbeat, 3).admit);
  EXPECT_TRUE(fence.Admit(MessageType::kRegisterAgain, 0).admit);
  EXPECT_EQ(fence.epoch(), 0u);  // a heartbeat does not register us
}

TEST(EpochFenceTest, AnOlderCoordinatorIsRefusedAfterRegisteringWithANewerOne) {
  EpochFence fence;
  ASSERT_TRUE(fence.Admit(MessageType::kRegistered, 4).admit);
  EXPECT_TRUE(fence.Admit(MessageType::kTaskAssignment, 4).admit);
  // The coordinator restarted (or another took the state over): registering again moves the
  // fence up.
  ASSERT_TRUE(fence.Admit(MessageType::kRegistered, 5).admit);
  EXPECT_EQ(fence.epoch(), 5u);

  // The old one still runs: nothing it sends counts.
  for (MessageType type : {MessageType::kTaskAssignment, MessageType::kLaunchDaemon,
                           MessageType::kResultAck, MessageType::kCancelJob,
                           MessageType::kReclaim, MessageType::kHeartbeat,
                           MessageType::kDrainWorker, MessageType::kLaunchStop}) {
    EXPECT_FALSE(fence.Admit(type, 4).admit) << wire::MessageTypeName(type);
  }
  EXPECT_EQ(fence.epoch(), 5u);
  EXPECT_EQ(fence.refused(), 8u);
  EXPECT_TRUE(fence.Admit(MessageType::kTaskAssignment, 5).admit);
}

TEST(EpochFenceTest, OnlyTheFirstRefusalOfAnEpochAsksForALogLine) {
  EpochFence fence;
  fence.Admit(MessageType::kRegistered, 9);
  EXPECT_TRUE(fence.Admit(MessageType::kHeartbeat, 7).first_refusal);
  EXPECT_FALSE(fence.Admit(MessageType::kHeartbeat, 7).first_refusal);
  EXPECT_TRUE(fence.Admit(MessageType::kHeartbeat, 8).first_refusal);
}

TEST(EpochFenceTest, ANewerCoordinatorIsHeardBeforeItAnswersOurRegistration) {
  EpochFence fence;
  fence.Admit(MessageType::kRegistered, 2);
  // Restarted: its heartbeat and its RegisterAgain come before its Registered.
  EXPECT_TRUE(fence.Admit(MessageType::kHeartbeat, 3).admit);
  EXPECT_TRUE(fence.Admit(MessageType::kRegisterAgain, 3).admit);
  EXPECT_EQ(fence.epoch(), 2u);
  EXPECT_TRUE(fence.Admit(MessageType::kRegistered, 3).admit);
  EXPECT_EQ(fence.epoch(), 3u);
}

// The state directory was started afresh (same keys, new state) while the worker ran on: the
// new coordinator's epochs count from 1 again. Its RegisterAgain and its answer to our
// registration pass (a coordinator that was taken over stops rather than answer), and from
// then on its epoch is the fence.
TEST(EpochFenceTest, ACoordinatorOfAFreshStateIsFollowedOnceItAnswersOurRegistration) {
  EpochFence fence;
  fence.Admit(MessageType::kRegistered, 500);
  EXPECT_FALSE(fence.Admit(MessageType::kHeartbeat, 1).admit);
  EXPECT_TRUE(fence.Admit(MessageType::kRegisterAgain, 1).admit);
  EXPECT_TRUE(fence.Admit(MessageType::kRegistered, 1).admit);
  EXPECT_EQ(fence.epoch(), 1u);
  EXPECT_TRUE(fence.Admit(MessageType::kTaskAssignment, 1).admit);
}

}  // namespace
}  // namespace coupler::worker
