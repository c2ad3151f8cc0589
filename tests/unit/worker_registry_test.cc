#include "coordinator/worker_registry.h"

#include <gtest/gtest.h>

namespace coupler::coordinator {
namespace {

wire::RegisterWorker Info(const std::string& id, uint32_t slots, uint32_t prefetch) {
  wire::RegisterWorker w;
  w.worker_id = id;
  w.slots = slots;
  w.prefetch = prefetch;
  return w;
}

TEST(WorkerRegistryTest, CreditIsSlotsPlusPrefetchMinusHeld) {
  WorkerRegistry r(5000);
  r.Register(Info("w", 2, 3), 0);
  WorkerEntry* w = r.Find("w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->credit(), 5u);
  w->StartTask({0, 1}, 0);
  w->StartTask({0, 2}, 0);
  EXPECT_EQ(w->credit(), 3u);
}

TEST(WorkerRegistryTest, DrainingWorkersGetNoCredit) {
  WorkerRegistry r(5000);
  r.Register(Info("w", 4, 0), 0);
  r.SetDraining("w");
  EXPECT_EQ(r.Find("w")->credit(), 0u);
  EXPECT_EQ(r.Find("w")->state, WorkerState::kDraining);
}

TEST(WorkerRegistryTest, SilentWorkersAreReapedWithWhatTheyHeld) {
  WorkerRegistry r(5000);
  r.Register(Info("quiet", 1, 0), 0);
  r.Register(Info("chatty", 1, 0), 0);
  r.Find("quiet")->StartTask({3, 7}, 0);
  EXPECT_TRUE(r.Heard("chatty", 4000));
  EXPECT_TRUE(r.ReapSilent(5000).empty());  // exactly at the timeout: still alive
  EXPECT_TRUE(r.Heard("chatty", 7500));
  auto dead = r.ReapSilent(8000);
  ASSERT_EQ(dead.size(), 1u);
  EXPECT_EQ(dead[0].first, "quiet");
  EXPECT_EQ(dead[0].second.count({3, 7}), 1u);
  EXPECT_FALSE(r.Heard("quiet", 8100));  // dead workers must register again
  EXPECT_EQ(r.alive(), 1u);
}

// When no worker at all is heard (the coordinator's own link is cut), nobody is given up on:
// their finished results are on the way. Once any is heard, each gets a fresh timeout.
TEST(WorkerRegistryTest, NobodyIsReapedWhileNoWorkerAtAllIsHeard) {
  WorkerRegistry r(5000);
  r.Register(Info("a", 1, 0), 0);
  r.Register(Info("b", 1, 0), 0);
  // The cut comes between their beats: b was heard last, 900 ms after a. When a passes the
  // timeout, b's last beat is 4.1 s old: no worker is heard, so a is not given up on.
  EXPECT_TRUE(r.Heard("b", 900));
  EXPECT_TRUE(r.ReapSilent(5100).empty());
  r.Find("a")->StartTask({0, 1}, 0);
  EXPECT_TRUE(r.ReapSilent(6000).empty());
  EXPECT_TRUE(r.Silent(*r.Find("a"), 6000));
  EXPECT_TRUE(r.ReapSilent(20000).empty());
  // b is heard 20 s after the last word: a, whose TCP retries back off as long as the outage
  // lasted, gets the timeout plus the outage beyond it (5 + 15 s) from now.
  EXPECT_TRUE(r.Heard("b", 20000));
  EXPECT_FALSE(r.Silent(*r.Find("a"), 20100));
  for (int64_t t = 24000; t <= 38000; t += 3500) {
    EXPECT_TRUE(r.Heard("b", t));
    EXPECT_TRUE(r.ReapSilent(t).empty());
  }
  // ...and is given up on once that passes with b still heard.
  EXPECT_TRUE(r.Heard("b", 40500));
  auto dead = r.ReapSilent(40500);
  ASSERT_EQ(dead.size(), 1u);
  EXPECT_EQ(dead[0].first, "a");
  EXPECT_EQ(dead[0].second.count({0, 1}), 1u);
}

// A worker that really died alone is reaped once another one is heard (after the grace an
// outage would have needed).
TEST(WorkerRegistryTest, ALoneDeadWorkerIsReapedATimeoutAfterANewOneRegisters) {
  WorkerRegistry r(5000);
  r.Register(Info("gone", 1, 0), 0);
  EXPECT_TRUE(r.ReapSilent(60000).empty());
  // Its timeout is stretched as if a 60 s outage had ended (by at most 30 s).
  r.Register(Info("new", 1, 0), 60000);
  for (int64_t t = 64000; t <= 95000; t += 3000) {
    EXPECT_TRUE(r.Heard("new", t));
    EXPECT_TRUE(r.ReapSilent(t).empty()) << t;
  }
  EXPECT_TRUE(r.Heard("new", 95500));
  ASSERT_EQ(r.ReapSilent(95500).size(), 1u);
  EXPECT_EQ(r.Find("gone")->state, WorkerState::kDead);
}

TEST(WorkerRegistryTest, ReRegistrationReturnsTheOldIncarnationsTasks) {
  WorkerRegistry r(5000);
  r.Register(Info("w", 1, 0), 0);
  r.Find("w")->StartTask({0, 9}, 0);
  auto lost = r.Register(Info("w", 2, 0), 100);
  EXPECT_EQ(lost.count({0, 9}), 1u);
  EXPECT_TRUE(r.Find("w")->inflight.empty());
  EXPECT_EQ(r.Find("w")->info.slots, 2u);
}

TEST(WorkerRegistryTest, UnknownWorkersAreNotHeard) {
  WorkerRegistry r(5000);
  EXPECT_FALSE(r.Heard("nobody", 0));
}

}  // namespace
}  // namespace coupler::coordinator
