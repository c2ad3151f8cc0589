// The commit generation the state marker records, and the check a writer's open makes with it:
// strict after a process crash (nothing written can be lost), lenient after the machine
// restarted (synchronous=NORMAL loses what no checkpoint synced yet, by design).
#include "coordinator/store/commit_generation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "coordinator/store/state_files.h"
#include "coordinator/store/state_store.h"
#include "tests/unit/store_test_util.h"

namespace coupler::store {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using namespace coupler::store::testing;

TEST(CommitGenerationTest, TheMarkerRoundTripsItsRecord) {
  const CommitGeneration g{42, 40, "b00t"};
  const std::string text = FormatStateMarker("/s/coupler.db", g);
  EXPECT_THAT(text, HasSubstr("coupler state: /s/coupler.db holds this coordinator's jobs\n"));
  EXPECT_EQ(ParseStateMarker(text), g);
}

TEST(CommitGenerationTest, AMarkerWithoutAWholeRecordHasNone) {
  // Written before generations were recorded: nothing to check.
  EXPECT_EQ(ParseStateMarker("coupler state: /s/coupler.db holds this coordinator's jobs\n"),
            std::nullopt);
  EXPECT_EQ(ParseStateMarker(""), std::nullopt);  // emptied by a power loss
  const std::string whole = FormatStateMarker("/s/coupler.db", {42, 40, "b00t"});
  for (size_t cut : {whole.find("durable"), whole.find("boot")}) {
    EXPECT_EQ(ParseStateMarker(whole.substr(0, cut)), std::nullopt) << whole.substr(0, cut);
  }
  EXPECT_EQ(ParseStateMarker("generation-record 1\ncommitted x\ndurable 1\nboot b\n"), std::nullopt);
  EXPECT_EQ(ParseStateMarker("generation-record 1\ncommitted 1\ndurable 2\nboot b\n"), std::nullopt);
  EXPECT_EQ(ParseStateMarker("generation-record 2\ncommitted 1\ndurable 1\nboot b\n"), std::nullopt);
}

TEST(CommitGenerationTest, OnTheSameBootEveryCommitMustBeThere) {
  const CommitGeneration recorded{7, 3, "boot-a"};
  EXPECT_TRUE(CheckCommitGeneration("/s", "/s/coupler.db", recorded, 7, "boot-a").ok());
  EXPECT_TRUE(CheckCommitGeneration("/s", "/s/coupler.db", recorded, 9, "boot-a").ok());
  Status lost = CheckCommitGeneration("/s", "/s/coupler.db", recorded, 5, "boot-a");
  ASSERT_FALSE(lost.ok());
  EXPECT_EQ(lost.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(lost.message(), HasSubstr("/s/coupler.db (with /s/coupler.db-wal) has lost commits: "
                                        "generation 7 recorded in /s/coupler.state, 5 found (2 "
                                        "commits gone"));
  EXPECT_THAT(lost.message(), HasSubstr(kAcceptStateLossFlag));
}

TEST(CommitGenerationTest, AfterTheMachineRestartedOnlyTheSyncedCommitsMustBeThere) {
  const CommitGeneration recorded{7, 3, "boot-a"};
  // A power loss may take the commits after the last checkpoint: that is no damage.
  EXPECT_TRUE(CheckCommitGeneration("/s", "/s/coupler.db", recorded, 3, "boot-b").ok());
  Status lost = CheckCommitGeneration("/s", "/s/coupler.db", recorded, 2, "boot-b");
  ASSERT_FALSE(lost.ok());
  EXPECT_THAT(lost.message(), HasSubstr("generation 3 recorded"));
  // An unknown boot id is never taken for the same boot.
  EXPECT_TRUE(CheckCommitGeneration("/s", "/s/coupler.db", {7, 3, ""}, 3, "").ok());
}

TEST(CommitGenerationTest, EveryCommitIsRecordedAndACheckpointMakesItDurable) {
  TempDir dir;
  auto store = OpenOrDie(dir.str());
  // A writer's start is a commit of its own: it moves the generation that fences older writers.
  EXPECT_EQ(store->generation(), 1u);
  ASSERT_TRUE(store->PutJob(MakeJob("j-000001")).ok());
  store->AddAttempt({"j-000001", 0, 0, "w1", "failed", "boom", 1});
  ASSERT_TRUE(store->Flush().ok());
  EXPECT_EQ(store->generation(), 3u);
  store->Settle();  // the marker is written off the caller's thread
  std::optional<CommitGeneration> recorded = ReadCommitGeneration(dir.str());
  ASSERT_TRUE(recorded);
  EXPECT_EQ(recorded->committed, 3u);
  EXPECT_EQ(recorded->boot_id, CurrentBootId());
  EXPECT_LT(recorded->durable, 3u);  // still only in the WAL

  // Enough commits to pass SQLite's checkpoint threshold (1,000 pages: the task log's blob of
  // 150,000 of them is ~6 MB): the store checkpoints in its place.
  for (uint64_t t = 0; t < 150'000; ++t) {
    TaskCommit c = MakeCommit("j-000001", t, 0);
    store->AddCommit(std::move(c));
  }
  ASSERT_TRUE(store->Flush().ok());
  store->Settle();
  EXPECT_EQ(store->durable_generation(), 4u);
  EXPECT_EQ(ReadCommitGeneration(dir.str())->durable, 4u);
}

// The marker and checkpoints are written on the checkpointer's thread: a store closed right
// after its commits still leaves the marker recording the last of them, and a checkpoint
// asked for is run before the close.
TEST(CommitGenerationTest, AClosedStoreLeavesTheMarkerCurrent) {
  TempDir dir;
  uint64_t last = 0;
  {
    auto store = OpenOrDie(dir.str());
    for (int i = 1; i <= 5; ++i) ASSERT_TRUE(store->PutJob(MakeJob("j-00000" + std::to_string(i))).ok());
    for (uint64_t t = 0; t < 150'000; ++t) store->AddCommit(MakeCommit("j-000001", t, 0));
    ASSERT_TRUE(store->Flush().ok());
    last = store->generation();
  }
  const std::optional<CommitGeneration> recorded = ReadCommitGeneration(dir.str());
  ASSERT_TRUE(recorded);
  EXPECT_EQ(recorded->committed, last);
  EXPECT_EQ(recorded->durable, last) << "the WAL passed the threshold: its checkpoint ran";
}

TEST(CommitGenerationTest, AfterAPowerLossTheStateOpensWithWhatWasSynced) {
  TempDir dir;
  { ASSERT_TRUE(OpenOrDie(dir.str())->PutJob(MakeJob("j-000001")).ok()); }
  // As a power loss could leave it: the marker renamed into place, the WAL's last commits not.
  ASSERT_TRUE(WriteCommitGeneration(dir.str(), (dir.path() / "coupler.db").string(),
                                    {5, 1, "a-boot-before-this-one"})
                  .ok());
  auto store = StateStore::Open(dir.str());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_EQ((*store)->LoadJobs()->size(), 1u);
}

TEST(CommitGenerationTest, AcceptingTheLossOpensWithWhatTheDatabaseHolds) {
  TempDir dir;
  { ASSERT_TRUE(OpenOrDie(dir.str())->PutJob(MakeJob("j-000001")).ok()); }
  ASSERT_TRUE(WriteCommitGeneration(dir.str(), (dir.path() / "coupler.db").string(),
                                    {5, 1, CurrentBootId()})
                  .ok());
  ASSERT_FALSE(StateStore::Open(dir.str()).ok());
  auto store = StateStore::Open(dir.str(), OpenMode::kReadWrite, LostCommits::kAccept);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_EQ((*store)->LoadJobs()->size(), 1u);
  // The marker now records what the database holds (2: the first writer's start and its job;
  // 3: this start), so the next open needs no flag.
  (*store)->Settle();
  EXPECT_EQ(ReadCommitGeneration(dir.str())->committed, 3u);
  store->reset();
  EXPECT_TRUE(StateStore::Open(dir.str()).ok());
}

}  // namespace
}  // namespace coupler::store
