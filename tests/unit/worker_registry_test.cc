#include "coordinator/worker_registry.h"

#include <algorithm>

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
  EXPECT_EQ(r.Find("gone")->state, WorkerState::kLost);
  EXPECT_EQ(r.workers_lost_total(), 1u);
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

// A worker that finished its drain and said goodbye is drained, not lost: it is no longer
// alive, is not counted as lost, and what it says after that is from a worker unknown.
TEST(WorkerRegistryTest, AWorkerThatFinishedItsDrainIsDrainedNotLost) {
  WorkerRegistry r(5000);
  r.Register(Info("w", 2, 0), 0);
  EXPECT_FALSE(r.MarkDrained("w", 100)) << "not draining: its idle beat is no goodbye";
  r.SetDraining("w");
  r.Find("w")->StartTask({0, 1}, 0);
  EXPECT_FALSE(r.MarkDrained("w", 200)) << "it still holds a task";
  EXPECT_TRUE(r.Find("w")->EndTask({0, 1}));
  EXPECT_TRUE(r.MarkDrained("w", 300));
  EXPECT_EQ(r.Find("w")->state, WorkerState::kDrained);
  EXPECT_EQ(WorkerStateName(r.Find("w")->state), "drained");
  EXPECT_EQ(r.alive(), 0u);
  EXPECT_EQ(r.workers_lost_total(), 0u);
  EXPECT_FALSE(r.Heard("w", 400));
  // Silent from now on, as it left: never reaped as lost.
  EXPECT_TRUE(r.ReapSilent(60'000).empty());
  EXPECT_EQ(r.Find("w")->state, WorkerState::kDrained);
}

TEST(WorkerRegistryTest, AWorkerGoneWithoutADrainIsLostAndCounted) {
  WorkerRegistry r(5000);
  r.Register(Info("a", 1, 0), 0);
  r.Register(Info("b", 1, 0), 0);
  r.Find("a")->StartTask({0, 1}, 0);
  EXPECT_EQ(r.Remove("a", 10).size(), 1u);
  EXPECT_EQ(r.Find("a")->state, WorkerState::kLost);
  EXPECT_EQ(WorkerStateName(WorkerState::kLost), "lost");
  EXPECT_TRUE(r.Remove("a", 20).empty()) << "lost once, counted once";
  EXPECT_EQ(r.workers_lost_total(), 1u);
  EXPECT_EQ(r.alive(), 1u);
}

// Drained and lost workers leave the list after kForgetAfterMs, the lost ones still counted;
// the alive ones stay however long they live.
TEST(WorkerRegistryTest, GoneWorkersAreForgottenAfterAWhileAndTheLostStayCounted) {
  constexpr int64_t kForget = WorkerRegistry::kForgetAfterMs;
  WorkerRegistry r(5000);
  r.Register(Info("quiet", 1, 0), 0);
  r.Register(Info("leaving", 1, 0), 0);
  r.Register(Info("chatty", 1, 0), 0);
  r.SetDraining("leaving");
  ASSERT_TRUE(r.MarkDrained("leaving", 1000));
  ASSERT_TRUE(r.Heard("chatty", 5500));
  ASSERT_EQ(r.ReapSilent(5500).size(), 1u);  // quiet
  // Time passes with chatty beating every second; the registry is reaped at `to`.
  int64_t now = 5500;
  auto pass_until = [&](int64_t to) {
    while (now < to) {
      now = std::min(now + 1000, to);
      ASSERT_TRUE(r.Heard("chatty", now));
    }
    r.ReapSilent(now);
  };
  pass_until(1000 + kForget);
  EXPECT_NE(r.Find("leaving"), nullptr) << "listed for kForgetAfterMs";
  pass_until(1000 + kForget + 1);
  EXPECT_EQ(r.Find("leaving"), nullptr);
  EXPECT_NE(r.Find("quiet"), nullptr) << "lost later than the other left";
  pass_until(5500 + kForget + 1);
  EXPECT_EQ(r.Find("quiet"), nullptr);
  EXPECT_NE(r.Find("chatty"), nullptr);
  EXPECT_EQ(r.workers_lost_total(), 1u);
  // A worker forgotten may come back under its id, afresh.
  r.Register(Info("quiet", 1, 0), now);
  EXPECT_EQ(r.Find("quiet")->state, WorkerState::kAlive);
}

// What a worker holds splits into started (its heartbeat said so) and prefetched.
TEST(WorkerRegistryTest, HeldTasksSplitIntoStartedAndPrefetched) {
  WorkerRegistry r(5000);
  r.Register(Info("w", 2, 10), 0);
  WorkerEntry* w = r.Find("w");
  for (uint64_t t = 0; t < 12; ++t) w->StartTask({0, t}, 0);
  w->MarkStarted({0, 0});
  w->MarkStarted({0, 1});
  EXPECT_EQ(w->started(), 2u);
  EXPECT_EQ(w->prefetched(), 10u);
}

}  // namespace
}  // namespace coupler::coordinator
